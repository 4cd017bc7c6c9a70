package org.sbclab.jobs;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.zip.CRC32;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.SequenceFile;
import org.apache.hadoop.io.WritableComparator;
import org.apache.spark.SerializableWritable;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;

/**
 * Checks a SequenceFile of BytesWritable pairs, such as {@code randomwriter} output or what Hadoop's
 * {@code sort} or {@link Sort} made of it, in place of Hadoop's {@code testmapredsort}, which needs
 * the MapReduce test jar. One task per part file (names not starting with {@code _} or {@code .},
 * taken in name order) counts records and key plus value bytes, counts adjacent pairs out of
 * BytesWritable order, and sums {@code crc32(key) << 32 | crc32(value)} modulo 2^64. That checksum
 * does not depend on record order or file layout, so running this on a sort's input and on its
 * output must give the same records, bytes and checksum. With {@code total-order} true it also
 * counts file boundaries where a file's first key is below the last key of the previous non-empty
 * file, i.e. whether the part files together form one sorted sequence, as a range-partitioned sort
 * produces; Hadoop's hash-partitioned sort only orders each file.
 *
 * <p>Prints one machine-readable line, {@code SBCLAB_RESULT {...}}, that sbclab stores with the run;
 * {@code boundary_violations} is null when the total order was not checked.
 */
public final class SortCheck {
    private SortCheck() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 2 || !(args[1].equals("true") || args[1].equals("false"))) {
            System.err.println("usage: SortCheck <dir> <total-order: true|false>");
            System.exit(2);
        }
        Path dir = new Path(args[0]);
        boolean totalOrder = Boolean.parseBoolean(args[1]);
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sbclab SortCheck"))) {
            Configuration conf = sc.hadoopConfiguration();
            FileSystem fs = dir.getFileSystem(conf);
            List<String> files = new ArrayList<>();
            FileStatus[] listing = fs.listStatus(dir, path ->
                    !path.getName().startsWith("_") && !path.getName().startsWith("."));
            Arrays.sort(listing, Comparator.comparing(status -> status.getPath().getName()));
            for (FileStatus status : listing) {
                if (status.isFile()) {
                    files.add(status.getPath().toString());
                }
            }
            // Executors need the driver's Hadoop settings (default FS, codecs).
            Broadcast<SerializableWritable<Configuration>> taskConf =
                    sc.broadcast(new SerializableWritable<>(new Configuration(conf)));
            List<FileSummary> summaries = sc.parallelize(files, Math.max(1, files.size()))
                    .map(file -> FileSummary.of(new Path(file), taskConf.value().value()))
                    .collect();

            long records = 0;
            long bytes = 0;
            long checksum = 0;
            long unorderedPairs = 0;
            long boundaryViolations = 0;
            byte[] previousLast = null;
            for (FileSummary summary : summaries) {
                records += summary.records;
                bytes += summary.bytes;
                checksum += summary.checksum;
                unorderedPairs += summary.unorderedPairs;
                if (summary.records == 0) {
                    continue;
                }
                if (previousLast != null && ByteOrder.INSTANCE.compare(summary.firstKey, previousLast) < 0) {
                    boundaryViolations++;
                }
                previousLast = summary.lastKey;
            }
            ResultLine result = new ResultLine()
                    .put("files", files.size())
                    .put("records", records)
                    .put("bytes", bytes)
                    .putUnsigned("checksum", checksum)
                    .put("unordered_pairs", unorderedPairs);
            if (totalOrder) {
                result.put("boundary_violations", boundaryViolations);
            } else {
                result.putNull("boundary_violations");
            }
            result.print();
        }
    }

    /** What one part file holds; only its first and last keys travel back, for the boundary check. */
    private static final class FileSummary implements Serializable {
        private static final long serialVersionUID = 1L;
        long records;
        long bytes;
        long checksum;
        long unorderedPairs;
        byte[] firstKey;
        byte[] lastKey;

        static FileSummary of(Path file, Configuration conf) throws IOException {
            FileSummary summary = new FileSummary();
            CRC32 crc = new CRC32();
            // Two key buffers used in turn, so the previous key is kept without copying every record.
            BytesWritable key = new BytesWritable();
            BytesWritable previous = new BytesWritable();
            BytesWritable value = new BytesWritable();
            try (SequenceFile.Reader reader = new SequenceFile.Reader(conf, SequenceFile.Reader.file(file))) {
                while (reader.next(key, value)) {
                    if (summary.records == 0) {
                        summary.firstKey = key.copyBytes();
                    } else if (WritableComparator.compareBytes(previous.getBytes(), 0, previous.getLength(),
                            key.getBytes(), 0, key.getLength()) > 0) {
                        summary.unorderedPairs++;
                    }
                    summary.records++;
                    summary.bytes += key.getLength() + value.getLength();
                    crc.reset();
                    crc.update(key.getBytes(), 0, key.getLength());
                    long keyCrc = crc.getValue();
                    crc.reset();
                    crc.update(value.getBytes(), 0, value.getLength());
                    summary.checksum += keyCrc << 32 | crc.getValue();
                    BytesWritable swap = previous;
                    previous = key;
                    key = swap;
                }
            }
            if (summary.records > 0) {
                summary.lastKey = previous.copyBytes();
            }
            return summary;
        }
    }
}
