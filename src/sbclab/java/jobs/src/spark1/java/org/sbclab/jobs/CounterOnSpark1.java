package org.sbclab.jobs;

import java.io.Serializable;

import org.apache.spark.Accumulator;
import org.apache.spark.AccumulatorParam;
import org.apache.spark.api.java.JavaSparkContext;

/** A named sum the tasks add to and the driver reads, on Spark 1 (which has no LongAccumulator); the
 * file is named apart from Spark 2's, which the Spark 1 build leaves out by name. */
final class Counter implements Serializable {
    private static final long serialVersionUID = 1L;
    private final Accumulator<Long> sum;

    private Counter(Accumulator<Long> sum) {
        this.sum = sum;
    }

    static Counter named(JavaSparkContext sc, String name) {
        return new Counter(sc.accumulator(0L, name, new LongSum()));
    }

    void add(long value) {
        sum.add(value);
    }

    long value() {
        return sum.value();
    }

    /** Scala 2.10's traits give Java no default methods: every one is written out. */
    private static final class LongSum implements AccumulatorParam<Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long addInPlace(Long a, Long b) {
            return a + b;
        }

        @Override
        public Long addAccumulator(Long a, Long b) {
            return a + b;
        }

        @Override
        public Long zero(Long initial) {
            return 0L;
        }
    }
}
