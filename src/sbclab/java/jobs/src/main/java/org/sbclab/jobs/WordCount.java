package org.sbclab.jobs;

import java.util.ArrayList;
import java.util.List;
import java.util.StringTokenizer;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

import scala.Tuple2;

/**
 * The Spark counterpart of Hadoop's {@code wordcount} example: lines are split with a default
 * {@link StringTokenizer} exactly as its TokenizerMapper does, counts are combined map-side and
 * summed into {@code partitions} reducers, and the output is {@code word<TAB>count} text, the
 * same lines TextOutputFormat writes for Hadoop.
 *
 * <p>Prints one machine-readable line, {@code SBCLAB_RESULT {...}}, that sbclab stores with the run.
 */
public final class WordCount {
    private WordCount() {}

    public static void main(String[] args) {
        int partitions = Args.partitions(args, 3, 2, "WordCount <input> <output> <partitions>");
        String input = args[0];
        String output = args[1];
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sbclab WordCount"))) {
            Counter tokens = Counter.named(sc, "tokens");
            Counter distinct = Counter.named(sc, "distinct");
            Counter totalCount = Counter.named(sc, "total_count");
            sc.textFile(input)
                    .flatMapToPair(line -> {
                        StringTokenizer tokenizer = new StringTokenizer(line);
                        List<Tuple2<String, Long>> words = new ArrayList<>();
                        while (tokenizer.hasMoreTokens()) {
                            words.add(new Tuple2<>(tokenizer.nextToken(), 1L));
                        }
                        tokens.add(words.size());
                        return Each.of(words.iterator());
                    })
                    .reduceByKey(Long::sum, partitions)
                    .map(wordCount -> {
                        // Counted where the lines are written, so the totals describe the output itself.
                        distinct.add(1);
                        totalCount.add(wordCount._2());
                        return wordCount._1() + "\t" + wordCount._2();
                    })
                    .saveAsTextFile(output);
            new ResultLine()
                    .put("tokens", tokens.value())
                    .put("distinct", distinct.value())
                    .put("total_count", totalCount.value())
                    .print();
        }
    }
}
