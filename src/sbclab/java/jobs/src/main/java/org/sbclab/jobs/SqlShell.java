package org.sbclab.jobs;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * What the {@code spark-sql} launcher runs: Spark SQL statements from {@code -e}, from a file ({@code -f}) or
 * typed at a {@code spark-sql>} prompt, each answered as Spark's own CLI does (rows tab-separated on stdout,
 * "Time taken" on stderr). Spark's CLI needs the Hive modules, which the assembled stacks do not hold; here
 * the catalog is Spark's in-memory one: a table or view lasts for the session, its data where it was written.
 */
public final class SqlShell {
    private static final String USAGE = "usage: spark-sql [-e 'SQL; ...' | -f FILE] (no argument: a prompt)";

    private SqlShell() {}

    public static void main(String[] args) throws IOException {
        String inline = null;
        String file = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("-e")) {
                inline = value(args, ++i);
            } else if (args[i].equals("-f")) {
                file = value(args, ++i);
            } else if (args[i].equals("-h") || args[i].equals("--help")) {
                System.out.println(USAGE);
                return;
            } else {
                fail("unknown argument '" + args[i] + "'; " + USAGE);
            }
        }
        SparkSession spark = SparkSession.builder().appName("spark-sql").getOrCreate();
        int status = 0;
        try {
            if (inline != null || file != null) {
                String text = inline != null ? inline : new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8);
                for (String statement : statements(text)) {
                    if (!run(spark, statement)) {
                        status = 1;
                        break;
                    }
                }
            } else {
                prompt(spark);
            }
        } finally {
            spark.stop();
        }
        System.exit(status);
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            fail(args[i - 1] + " needs a value; " + USAGE);
        }
        return args[i];
    }

    private static void fail(String message) {
        System.err.println(message);
        System.exit(2);
    }

    private static void prompt(SparkSession spark) throws IOException {
        boolean terminal = System.console() != null;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder pending = new StringBuilder();
        while (true) {
            if (terminal) {
                System.out.print(pending.length() == 0 ? "spark-sql> " : "         > ");
                System.out.flush();
            }
            String line = in.readLine();
            if (line == null) {
                break;
            }
            pending.append(line).append('\n');
            if (!endsStatement(pending.toString())) {
                continue;
            }
            List<String> complete = statements(pending.toString());
            pending.setLength(0);
            for (String statement : complete) {
                String word = statement.trim().toLowerCase(Locale.ROOT);
                if (word.equals("exit") || word.equals("quit")) {
                    return;
                }
                run(spark, statement);
            }
        }
    }

    /** Runs one statement; false when Spark refused it (the message is on stderr). */
    private static boolean run(SparkSession spark, String statement) {
        long start = System.nanoTime();
        try {
            Dataset<Row> result = spark.sql(statement);
            List<Row> rows = result.collectAsList();
            StringBuilder out = new StringBuilder();
            for (Row row : rows) {
                for (int i = 0; i < row.length(); i++) {
                    if (i > 0) {
                        out.append('\t');
                    }
                    out.append(row.isNullAt(i) ? "NULL" : String.valueOf(row.get(i)));
                }
                out.append('\n');
            }
            System.out.print(out);
            System.out.flush();
            System.err.printf(Locale.ROOT, "Time taken: %.3f seconds, Fetched %d row(s)%n",
                    (System.nanoTime() - start) / 1e9, rows.size());
            return true;
        } catch (Exception e) {  // Spark's AnalysisException is checked, though Scala does not declare it
            String message = e.getMessage() == null ? e.toString() : e.getMessage();
            System.err.println("Error in query: " + message.split("\\R", 2)[0]);
            return false;
        }
    }

    /** Whether the text ends with a statement's ';' (outside quotes and comments), so it can be run. */
    private static boolean endsStatement(String text) {
        return split(text, true).complete;
    }

    /** The statements of a text, split at every ';' outside quotes and comments; blank ones dropped. */
    static List<String> statements(String text) {
        return split(text, false).statements;
    }

    private static final class Split {
        final List<String> statements;
        final boolean complete;

        Split(List<String> statements, boolean complete) {
            this.statements = statements;
            this.complete = complete;
        }
    }

    private static Split split(String text, boolean onlyComplete) {
        List<String> found = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        char quote = 0;
        boolean comment = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (comment) {
                if (c == '\n') {
                    comment = false;
                    current.append(c);
                }
                continue;
            }
            if (quote != 0) {
                current.append(c);
                if (c == '\\' && i + 1 < text.length()) {
                    current.append(text.charAt(++i));
                } else if (c == quote) {
                    quote = 0;
                }
                continue;
            }
            if (c == '-' && i + 1 < text.length() && text.charAt(i + 1) == '-') {
                comment = true;
                i++;
            } else if (c == '\'' || c == '"' || c == '`') {
                quote = c;
                current.append(c);
            } else if (c == ';') {
                if (!current.toString().trim().isEmpty()) {
                    found.add(current.toString().trim());
                }
                current.setLength(0);
            } else {
                current.append(c);
            }
        }
        boolean complete = quote == 0 && current.toString().trim().isEmpty() && !found.isEmpty();
        if (!onlyComplete && !current.toString().trim().isEmpty()) {
            found.add(current.toString().trim());
        }
        return new Split(found, complete);
    }
}
