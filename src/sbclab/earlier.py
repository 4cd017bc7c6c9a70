"""What clusters and runs recorded by earlier versions of sbclab had, where later ones record it: read
by every layer that loads such a record, so it stands below them all."""

# The stack of every cluster and run recorded before stacks had names, and the setup other stacks are
# compared with.
FIRST_STACK = "lee-park-2026"
