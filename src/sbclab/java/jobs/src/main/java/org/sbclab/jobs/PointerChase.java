package org.sbclab.jobs;

import java.util.SplittableRandom;

/**
 * Memory latency by buffer size: the time of one dependent load while chasing a random cyclic
 * permutation of a buffer's cache lines (ramlat's and tinymembench's method). Each load's address is
 * the value the previous one read, so neither the core nor its prefetchers can overlap them; a random
 * single cycle through every line leaves no stride to predict. Small buffers give the caches' latency,
 * large ones DRAM's with the TLB misses a random walk meets.
 *
 * <p>Arguments: seconds per size, then buffer sizes in bytes. Prints one {@code SBCLAB_RESULT} line:
 * {@code ns_<bytes>} per size, and {@code end_<bytes>}, where each chase ended, so no JIT can drop it.
 *
 * <p>Each size is timed for the wall-clock seconds given, in chunks: on a node whose CPU is a share of
 * a host core the time includes the waits for its quota, as every other figure of the node does.
 */
public final class PointerChase {
    private static final int LINE_BYTES = 64;
    private static final int INTS_PER_LINE = LINE_BYTES / Integer.BYTES;
    private static final int CHUNK = 1 << 16;

    private PointerChase() {
    }

    /** The buffer as ints, line i's first int holding the index of the next line's; one cycle (Sattolo). */
    static int[] ring(long bytes, long seed) {
        int lines = (int) Math.max(2, bytes / LINE_BYTES);
        int[] order = new int[lines];
        for (int i = 0; i < lines; i++) {
            order[i] = i;
        }
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = lines - 1; i > 0; i--) {
            int j = random.nextInt(i);  // j < i: Sattolo's shuffle, a single cycle through every line
            int swap = order[i];
            order[i] = order[j];
            order[j] = swap;
        }
        int[] ring = new int[lines * INTS_PER_LINE];
        for (int i = 0; i < lines; i++) {
            ring[order[i] * INTS_PER_LINE] = order[(i + 1) % lines] * INTS_PER_LINE;
        }
        return ring;
    }

    static int chase(int[] ring, int from, int loads) {
        int at = from;
        for (int i = 0; i < loads; i++) {
            at = ring[at];
        }
        return at;
    }

    /** Nanoseconds per dependent load over `seconds` of wall-clock time; where the chase ended in end[0]. */
    static double nsPerLoad(int[] ring, double seconds, int[] end) {
        int at = chase(ring, 0, ring.length / INTS_PER_LINE);  // every line touched once before timing
        long loads = 0;
        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        long now;
        do {
            at = chase(ring, at, CHUNK);
            loads += CHUNK;
            now = System.nanoTime();
        } while (now < deadline);
        end[0] = at;
        return (now - start) / (double) loads;
    }

    public static void main(String[] args) {
        if (args.length < 2) {
            System.err.println("usage: PointerChase SECONDS_PER_SIZE BYTES...");
            System.exit(2);
        }
        double seconds = Double.parseDouble(args[0]);
        int[] end = new int[1];
        // The chase loop compiled before the first size is timed, on a buffer that fits any L1.
        int[] warm = ring(16 * 1024, 1);
        for (int i = 0; i < 200; i++) {
            end[0] ^= chase(warm, end[0], CHUNK);
        }
        ResultLine result = new ResultLine();
        for (int i = 1; i < args.length; i++) {
            long bytes = Long.parseLong(args[i]);
            double ns = nsPerLoad(ring(bytes, bytes), seconds, end);
            result.put("ns_" + bytes, ns).put("end_" + bytes, end[0]);
        }
        result.print();
    }
}
