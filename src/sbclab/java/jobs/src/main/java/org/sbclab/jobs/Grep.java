package org.sbclab.jobs;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The Spark grep used alongside Hadoop's {@code grep} example: lines in which the regular
 * expression is found are written out as text. The {@code matches} total counts every successive
 * {@link Matcher#find()} on every line, which is what Hadoop's RegexMapper emits and its grep sums.
 *
 * <p>Prints one machine-readable line, {@code SBCLAB_RESULT {...}}, that sbclab stores with the run.
 */
public final class Grep {
    private Grep() {}

    public static void main(String[] args) {
        if (args.length != 3) {
            System.err.println("usage: Grep <input> <output> <regex>");
            System.exit(2);
        }
        String input = args[0];
        String output = args[1];
        String regex = args[2];
        try {
            Pattern.compile(regex);
        } catch (PatternSyntaxException e) {
            System.err.println("Grep: invalid regex: " + e.getMessage());
            System.exit(2);
        }
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sbclab Grep"))) {
            Counter inputLines = Counter.named(sc, "input_lines");
            Counter matchedLines = Counter.named(sc, "matched_lines");
            Counter matches = Counter.named(sc, "matches");
            sc.textFile(input)
                    .mapPartitions(lines -> {
                        // Compiled once per partition: Pattern is thread-safe but costly to build.
                        Pattern pattern = Pattern.compile(regex);
                        return new FilterIterator(lines, pattern, inputLines, matchedLines, matches);
                    })
                    .saveAsTextFile(output);
            new ResultLine()
                    .put("input_lines", inputLines.value())
                    .put("matched_lines", matchedLines.value())
                    .put("matches", matches.value())
                    .print();
        }
    }

    /** Streams the matching lines and publishes the partition's counts once it is exhausted. */
    private static final class FilterIterator extends Each<String> {
        private final Iterator<String> lines;
        private final Matcher matcher;
        private final Counter inputLines;
        private final Counter matchedLines;
        private final Counter matches;
        private String pending;
        private long seen;
        private long matched;
        private long found;
        private boolean published;

        FilterIterator(Iterator<String> lines, Pattern pattern, Counter inputLines,
                       Counter matchedLines, Counter matches) {
            this.lines = lines;
            this.matcher = pattern.matcher("");
            this.inputLines = inputLines;
            this.matchedLines = matchedLines;
            this.matches = matches;
        }

        @Override
        public boolean hasNext() {
            while (pending == null && lines.hasNext()) {
                String line = lines.next();
                seen++;
                matcher.reset(line);
                long inLine = 0;
                while (matcher.find()) {
                    inLine++;
                }
                if (inLine > 0) {
                    matched++;
                    found += inLine;
                    pending = line;
                }
            }
            if (pending == null && !published) {
                published = true;
                inputLines.add(seen);
                matchedLines.add(matched);
                matches.add(found);
            }
            return pending != null;
        }

        @Override
        public String next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            String line = pending;
            pending = null;
            return line;
        }
    }
}
