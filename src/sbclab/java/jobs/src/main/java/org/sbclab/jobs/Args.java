package org.sbclab.jobs;

/** The argument check the jobs share: a fixed count, and a positive partition count at one position. */
final class Args {
    private Args() {}

    /** The partition count at {@code index}; on wrong arguments, the usage line and exit status 2. */
    static int partitions(String[] args, int count, int index, String usage) {
        try {
            if (args.length != count) {
                throw new IllegalArgumentException();
            }
            int partitions = Integer.parseInt(args[index]);
            if (partitions < 1) {
                throw new IllegalArgumentException();
            }
            return partitions;
        } catch (IllegalArgumentException e) {
            System.err.println("usage: " + usage);
            System.exit(2);
            throw e;
        }
    }
}
