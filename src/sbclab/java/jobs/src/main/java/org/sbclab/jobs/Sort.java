package org.sbclab.jobs;


import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

import scala.Tuple2;

/**
 * The Spark counterpart of Hadoop's {@code sort} example on {@code randomwriter} output: a
 * SequenceFile of BytesWritable keys and values is sorted by key in BytesWritable's own order
 * (unsigned bytes, then length) into {@code partitions} range partitions and written back as a
 * SequenceFile of BytesWritable pairs. Range partitioning makes the part files, in name order, one
 * total order; {@link SortCheck} verifies the result against the input.
 *
 * <p>Prints one machine-readable line, {@code SBCLAB_RESULT {...}}, that sbclab stores with the run.
 */
public final class Sort {
    private Sort() {}

    /** A class literal cannot carry type arguments, and Spark's Java API needs them to type the pairs. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static final Class<SequenceFileInputFormat<BytesWritable, BytesWritable>> INPUT_FORMAT =
            (Class) SequenceFileInputFormat.class;

    public static void main(String[] args) {
        int partitions = Args.partitions(args, 3, 2, "Sort <input> <output> <partitions>");
        String input = args[0];
        String output = args[1];
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sbclab Sort"))) {
            Configuration conf = new Configuration(sc.hadoopConfiguration());
            Counter records = Counter.named(sc, "records");
            Counter bytes = Counter.named(sc, "bytes");
            sc.newAPIHadoopFile(input, INPUT_FORMAT, BytesWritable.class, BytesWritable.class, conf)
                    // Copied out because the record reader reuses its Writables, which are not
                    // Serializable.
                    .mapToPair(record -> new Tuple2<>(record._1().copyBytes(), record._2().copyBytes()))
                    .sortByKey(ByteOrder.INSTANCE, true, partitions)
                    // Counted after the shuffle: the range partitioner's sampling job re-reads the
                    // input, so a map-side count would include the sample pass.
                    .mapPartitionsToPair(sorted -> new Each<Tuple2<BytesWritable, BytesWritable>>() {
                        private long count;
                        private long size;

                        @Override
                        public boolean hasNext() {
                            if (sorted.hasNext()) {
                                return true;
                            }
                            records.add(count);
                            bytes.add(size);
                            count = 0;
                            size = 0;
                            return false;
                        }

                        @Override
                        public Tuple2<BytesWritable, BytesWritable> next() {
                            Tuple2<byte[], byte[]> record = sorted.next();
                            count++;
                            size += record._1().length + record._2().length;
                            return new Tuple2<>(new BytesWritable(record._1()),
                                    new BytesWritable(record._2()));
                        }
                    })
                    .saveAsNewAPIHadoopFile(output, BytesWritable.class, BytesWritable.class,
                            SequenceFileOutputFormat.class, conf);
            new ResultLine()
                    .put("records", records.value())
                    .put("bytes", bytes.value())
                    .print();
        }
    }
}
