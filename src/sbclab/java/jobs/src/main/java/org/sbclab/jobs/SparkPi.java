package org.sbclab.jobs;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Monte Carlo estimate of pi with the same shape as Hadoop's QuasiMonteCarlo: {@code slices}
 * tasks of {@code samplesPerSlice} points each, so both engines do the same amount of work.
 *
 * <p>Prints one machine-readable line, {@code SBCLAB_RESULT {...}}, that sbclab stores with the run.
 */
public final class SparkPi {
    private SparkPi() {}

    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: SparkPi <slices> <samples-per-slice>");
            System.exit(2);
        }
        int slices = Integer.parseInt(args[0]);
        long samplesPerSlice = Long.parseLong(args[1]);
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sbclab Pi"))) {
            List<Integer> seeds = new ArrayList<>();
            for (int i = 0; i < slices; i++) {
                seeds.add(i);
            }
            long inside = sc.parallelize(seeds, slices).map(seed -> {
                SplittableRandom random = new SplittableRandom(0x5BC1ABL * 1_000_003L + seed);
                long hits = 0;
                for (long i = 0; i < samplesPerSlice; i++) {
                    double x = random.nextDouble() * 2 - 1;
                    double y = random.nextDouble() * 2 - 1;
                    if (x * x + y * y <= 1) {
                        hits++;
                    }
                }
                return hits;
            }).reduce(Long::sum);
            long total = samplesPerSlice * slices;
            double estimate = 4.0 * inside / total;
            System.out.printf("SBCLAB_RESULT {\"samples\": %d, \"inside\": %d, \"estimate\": %.12f}%n",
                    total, inside, estimate);
        }
    }
}
