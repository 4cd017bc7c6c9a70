package org.sbclab.jobs;

import java.util.Arrays;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.examples.terasort.TeraOutputFormat;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.lib.input.FixedLengthInputFormat;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

import scala.Tuple2;

/**
 * The Spark counterpart of Hadoop's {@code terasort}: the 100-byte records TeraGen writes are read,
 * range-partitioned and sorted by their 10-byte keys in unsigned byte order into {@code partitions}
 * partitions, and written with Hadoop's {@link TeraOutputFormat}, so the part files taken in name
 * order are globally sorted and pass Hadoop's {@code teravalidate}. Like Hadoop's TeraSort, the
 * output is written with {@code mapreduce.terasort.output.replication} (default 1) replicas; set it
 * as {@code spark.hadoop.mapreduce.terasort.output.replication}.
 *
 * <p>Input goes through Hadoop's {@link FixedLengthInputFormat} rather than TeraInputFormat: the
 * 3.3.6 TeraInputFormat opens files with a FileSystem builder call that Spark's bundled Hadoop
 * client (3.3.4) lacks. Both split a file at the same 100-byte record boundaries.
 *
 * <p>Prints one machine-readable line, {@code SBCLAB_RESULT {...}}, that sbclab stores with the run.
 */
public final class TeraSort {
    private static final String OUTPUT_REPLICATION = "mapreduce.terasort.output.replication";

    private TeraSort() {}

    public static void main(String[] args) {
        int partitions = Args.partitions(args, 3, 2, "TeraSort <input> <output> <partitions>");
        String input = args[0];
        String output = args[1];
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sbclab TeraSort"))) {
            Configuration readConf = new Configuration(sc.hadoopConfiguration());
            FixedLengthInputFormat.setRecordLength(readConf, TeraGen.RECORD_LENGTH);
            Configuration writeConf = new Configuration(sc.hadoopConfiguration());
            writeConf.setInt("dfs.replication", writeConf.getInt(OUTPUT_REPLICATION, 1));

            Counter rows = Counter.named(sc, "rows");
            sc.newAPIHadoopFile(input, FixedLengthInputFormat.class, LongWritable.class, BytesWritable.class,
                            readConf)
                    // Copied out because the record reader reuses its buffer and Writables are not
                    // Serializable.
                    .mapToPair(record -> {
                        byte[] bytes = record._2().getBytes();
                        return new Tuple2<>(Arrays.copyOfRange(bytes, 0, TeraGen.KEY_LENGTH),
                                Arrays.copyOfRange(bytes, TeraGen.KEY_LENGTH, TeraGen.RECORD_LENGTH));
                    })
                    .sortByKey(ByteOrder.INSTANCE, true, partitions)
                    // Counted after the shuffle: the range partitioner's sampling job re-reads the
                    // input, so a map-side count would include the sample pass.
                    .mapPartitionsToPair(sorted -> new Each<Tuple2<Text, Text>>() {
                        private long count;

                        @Override
                        public boolean hasNext() {
                            if (sorted.hasNext()) {
                                return true;
                            }
                            rows.add(count);
                            count = 0;
                            return false;
                        }

                        @Override
                        public Tuple2<Text, Text> next() {
                            Tuple2<byte[], byte[]> record = sorted.next();
                            count++;
                            return new Tuple2<>(new Text(record._1()), new Text(record._2()));
                        }
                    })
                    .saveAsNewAPIHadoopFile(output, Text.class, Text.class, TeraOutputFormat.class,
                            writeConf);
            new ResultLine().put("rows", rows.value()).print();
        }
    }
}
