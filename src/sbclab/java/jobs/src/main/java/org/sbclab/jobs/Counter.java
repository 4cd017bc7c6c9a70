package org.sbclab.jobs;

import java.io.Serializable;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.util.LongAccumulator;

/**
 * A named sum the tasks add to and the driver reads, on Spark 2 and later (LongAccumulator). The
 * Spark 1 build has its own, over the accumulators of that line (src/spark1), so the jobs are one
 * source for every stack.
 */
final class Counter implements Serializable {
    private static final long serialVersionUID = 1L;
    private final LongAccumulator sum;

    private Counter(LongAccumulator sum) {
        this.sum = sum;
    }

    static Counter named(JavaSparkContext sc, String name) {
        return new Counter(sc.sc().longAccumulator(name));
    }

    void add(long value) {
        sum.add(value);
    }

    long value() {
        return sum.value();
    }
}
