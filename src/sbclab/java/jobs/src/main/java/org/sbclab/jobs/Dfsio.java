package org.sbclab.jobs;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SerializableWritable;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;

/**
 * The Spark counterpart of Hadoop's TestDFSIO {@code -write} and {@code -read}: one task per file
 * {@code <dir>/io_data/test_io_<i>}, each writing (or reading) {@code bytesPerFile} bytes through the
 * Hadoop FileSystem API with a {@code bufferBytes} buffer, producing the same file bytes TestDFSIO
 * does. As in TestDFSIO's IOMapperBase, a task times its I/O and the stream close but not the open,
 * and the driver derives TestDFSIO's report: throughput over the summed task time, the mean and
 * standard deviation of the per-file rates, and the wall time of the job. MB means 2^20 bytes, as in
 * TestDFSIO's {@code toMB}. A write first deletes {@code <dir>/io_data}, as TestDFSIO does.
 *
 * <p>A read that finds a file shorter than {@code bytesPerFile} fails the job (exit status 1), since
 * its rate would describe less data than was asked for.
 *
 * <p>Prints one machine-readable line, {@code SBCLAB_RESULT {...}}, that sbclab stores with the run.
 */
public final class Dfsio {
    private static final double MEGA = 1048576.0;
    private static final int DEFAULT_BUFFER = 1000000;

    private Dfsio() {}

    public static void main(String[] args) throws IOException {
        boolean write;
        int files;
        long bytesPerFile;
        int bufferBytes = DEFAULT_BUFFER;
        try {
            if (args.length != 4 && args.length != 5) {
                throw new IllegalArgumentException();
            }
            if (!args[0].equals("write") && !args[0].equals("read")) {
                throw new IllegalArgumentException();
            }
            write = args[0].equals("write");
            files = Integer.parseInt(args[2]);
            bytesPerFile = Long.parseLong(args[3]);
            if (args.length == 5) {
                bufferBytes = Integer.parseInt(args[4]);
            }
            if (files < 1 || bytesPerFile < 0 || bufferBytes < 1) {
                throw new IllegalArgumentException();
            }
        } catch (IllegalArgumentException e) {
            System.err.println("usage: Dfsio write|read <dir> <files> <bytes-per-file> [buffer-bytes]");
            System.exit(2);
            return;
        }
        String mode = args[0];
        Path dataDir = new Path(args[1], "io_data");
        int buffer = bufferBytes;
        boolean shortRead = false;
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sbclab Dfsio"))) {
            Configuration conf = sc.hadoopConfiguration();
            if (write) {
                dataDir.getFileSystem(conf).delete(dataDir, true);
            }
            // Executors need the driver's Hadoop settings (default FS, replication, block size).
            Broadcast<SerializableWritable<Configuration>> taskConf =
                    sc.broadcast(new SerializableWritable<>(new Configuration(conf)));
            String dir = dataDir.toString();
            List<Integer> ids = new ArrayList<>();
            for (int i = 0; i < files; i++) {
                ids.add(i);
            }
            long start = System.nanoTime();
            List<long[]> tasks = sc.parallelize(ids, files).map(i -> {
                Path file = new Path(dir, "test_io_" + i);
                Configuration c = taskConf.value().value();
                long[] io = write ? writeFile(file, c, bytesPerFile, buffer)
                        : readFile(file, c, bytesPerFile, buffer);
                return new long[] {io[0], io[1], i};
            }).collect();
            double execSeconds = (System.nanoTime() - start) / 1e9;

            long totalBytes = 0;
            double totalSeconds = 0;
            double rateSum = 0;
            double rateSquares = 0;
            for (long[] task : tasks) {
                long bytes = task[0];
                double seconds = task[1] / 1e9;
                if (!write && bytes < bytesPerFile) {
                    System.err.printf("Dfsio: %s/test_io_%d has %d bytes, %d were asked for%n",
                            dir, task[2], bytes, bytesPerFile);
                    shortRead = true;
                }
                double rate = bytes / MEGA / seconds;
                totalBytes += bytes;
                totalSeconds += seconds;
                rateSum += rate;
                rateSquares += rate * rate;
            }
            if (!shortRead) {
                double mean = rateSum / files;
                // TestDFSIO's formula; abs() guards against rounding just below zero.
                double stdDev = Math.sqrt(Math.abs(rateSquares / files - mean * mean));
                new ResultLine()
                        .put("mode", mode)
                        .put("files", files)
                        .put("bytes", totalBytes)
                        .put("total_mbytes", totalBytes / MEGA)
                        .put("throughput_mb_s", totalBytes / MEGA / totalSeconds)
                        .put("average_io_rate_mb_s", mean)
                        .put("io_rate_std_dev", stdDev)
                        .put("exec_time_s", execSeconds)
                        .print();
            }
        }
        if (shortRead) {
            System.exit(1);
        }
    }

    /** Returns {bytes written, nanoseconds}. */
    private static long[] writeFile(Path file, Configuration conf, long size, int bufferBytes)
            throws IOException {
        // All zeros, which is what TestDFSIO really writes: its WriteMapper fills the buffer in its
        // constructor, before configure() sizes and allocates it.
        byte[] buffer = new byte[bufferBytes];
        FileSystem fs = file.getFileSystem(conf);
        FSDataOutputStream out = fs.create(file, true, bufferBytes);
        long start = System.nanoTime();
        long written = 0;
        try {
            while (written < size) {
                int n = (int) Math.min(bufferBytes, size - written);
                out.write(buffer, 0, n);
                written += n;
            }
        } finally {
            out.close();
        }
        return new long[] {written, System.nanoTime() - start};
    }

    /** Returns {bytes read, nanoseconds}; stops early only at end of file. */
    private static long[] readFile(Path file, Configuration conf, long size, int bufferBytes)
            throws IOException {
        byte[] buffer = new byte[bufferBytes];
        FileSystem fs = file.getFileSystem(conf);
        FSDataInputStream in = fs.open(file);
        long start = System.nanoTime();
        long read = 0;
        try {
            while (read < size) {
                int n = in.read(buffer, 0, (int) Math.min(bufferBytes, size - read));
                if (n < 0) {
                    break;
                }
                read += n;
            }
        } finally {
            in.close();
        }
        return new long[] {read, System.nanoTime() - start};
    }
}
