"""sbclab: deploy, benchmark and report Hadoop and Spark on single-board-computer clusters."""

__version__ = "0.1.0"
