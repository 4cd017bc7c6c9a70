package org.sbclab.jobs;

import java.util.Iterator;

/**
 * What a job's flatMap and mapPartitions functions return: an iterator that is also its own
 * Iterable, because Spark 2 and later take an Iterator there and Spark 1 an Iterable, so one source
 * compiles against both.
 */
abstract class Each<T> implements Iterator<T>, Iterable<T> {
    @Override
    public final Iterator<T> iterator() {
        return this;
    }

    static <T> Each<T> of(Iterator<T> items) {
        return new Each<T>() {
            @Override
            public boolean hasNext() {
                return items.hasNext();
            }

            @Override
            public T next() {
                return items.next();
            }
        };
    }
}
