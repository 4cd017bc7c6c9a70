package org.sbclab.jobs;

import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

import scala.Tuple2;

/**
 * Sort's input where no YARN runs to take Hadoop's {@code randomwriter} (Spark's standalone
 * manager): a SequenceFile of BytesWritable keys and values with randomwriter's default shape, keys
 * of 10 to 999 random bytes and values of 0 to 19,999, each partition writing records until its
 * share of {@code bytes} is reached. Partition {@code p} draws from a generator seeded with {@code p},
 * so the same arguments give the same file.
 *
 * <p>Prints one machine-readable line, {@code SBCLAB_RESULT {...}}, that sbclab stores with the run.
 */
public final class RandomWriter {
    static final int MIN_KEY = 10;
    static final int KEY_RANGE = 990;
    static final int MIN_VALUE = 0;
    static final int VALUE_RANGE = 20_000;

    private RandomWriter() {}

    public static void main(String[] args) {
        int partitions = Args.partitions(args, 3, 2, "RandomWriter <bytes> <output> <partitions>");
        long total = Long.parseLong(args[0]);
        String output = args[1];
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sbclab RandomWriter"))) {
            Counter records = Counter.named(sc, "records");
            Counter bytes = Counter.named(sc, "bytes");
            List<Integer> slices = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                slices.add(p);
            }
            Configuration conf = new Configuration(sc.hadoopConfiguration());
            sc.parallelize(slices, partitions)
                    .mapPartitionsToPair(ps -> {
                        int p = ps.next();
                        long share = total / partitions + (p < total % partitions ? 1 : 0);
                        return new Records(share, new Random(p), records, bytes);
                    })
                    .saveAsNewAPIHadoopFile(output, BytesWritable.class, BytesWritable.class,
                            SequenceFileOutputFormat.class, conf);
            new ResultLine()
                    .put("records", records.value())
                    .put("bytes", bytes.value())
                    .print();
        }
    }

    /** Draws records lazily, so a partition of any size streams straight into its file. */
    private static final class Records extends Each<Tuple2<BytesWritable, BytesWritable>> {
        private long left;
        private final Random random;
        private final Counter records;
        private final Counter bytes;

        Records(long share, Random random, Counter records, Counter bytes) {
            this.left = share;
            this.random = random;
            this.records = records;
            this.bytes = bytes;
        }

        @Override
        public boolean hasNext() {
            return left > 0;
        }

        @Override
        public Tuple2<BytesWritable, BytesWritable> next() {
            if (left <= 0) {
                throw new NoSuchElementException();
            }
            byte[] key = draw(MIN_KEY + random.nextInt(KEY_RANGE));
            byte[] value = draw(MIN_VALUE + random.nextInt(VALUE_RANGE));
            left -= key.length + value.length;
            records.add(1);
            bytes.add(key.length + value.length);
            return new Tuple2<>(new BytesWritable(key), new BytesWritable(value));
        }

        private byte[] draw(int length) {
            byte[] drawn = new byte[length];
            random.nextBytes(drawn);
            return drawn;
        }
    }
}
