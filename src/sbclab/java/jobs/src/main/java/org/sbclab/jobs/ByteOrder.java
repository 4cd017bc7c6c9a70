package org.sbclab.jobs;

import java.io.Serializable;
import java.util.Comparator;

import org.apache.hadoop.io.WritableComparator;

/**
 * Hadoop's raw byte ordering ({@link WritableComparator#compareBytes}, which BytesWritable's
 * comparator and TeraSort's key comparison use): unsigned lexicographic, and a proper prefix sorts
 * first. Serializable because Spark ships it to the tasks that range-partition and sort.
 */
final class ByteOrder implements Comparator<byte[]>, Serializable {
    static final ByteOrder INSTANCE = new ByteOrder();
    private static final long serialVersionUID = 1L;

    private ByteOrder() {}

    @Override
    public int compare(byte[] a, byte[] b) {
        return WritableComparator.compareBytes(a, 0, a.length, b, 0, b.length);
    }

    private Object readResolve() {
        return INSTANCE;
    }
}
