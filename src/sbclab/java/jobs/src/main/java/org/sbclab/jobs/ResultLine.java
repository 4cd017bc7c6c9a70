package org.sbclab.jobs;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Builds the single {@code SBCLAB_RESULT {...}} line a job prints on stdout for sbclab to store.
 *
 * <p>Keys and string values are fixed identifiers chosen by the jobs, so they need no escaping.
 */
final class ResultLine {
    private final StringBuilder json = new StringBuilder("{");

    ResultLine put(String key, long value) {
        return raw(key, Long.toString(value));
    }

    /** JSON has no NaN or infinity, so those become null rather than an unparseable line. */
    ResultLine put(String key, double value) {
        return raw(key, Double.isFinite(value) ? String.format(Locale.ROOT, "%.6f", value) : "null");
    }

    ResultLine put(String key, String value) {
        return raw(key, '"' + value + '"');
    }

    ResultLine putNull(String key) {
        return raw(key, "null");
    }

    /** A quoted decimal string, because JSON readers parse numbers as doubles and lose 64-bit precision. */
    ResultLine putUnsigned(String key, long value) {
        return put(key, Long.toUnsignedString(value));
    }

    private ResultLine raw(String key, String value) {
        if (json.length() > 1) {
            json.append(", ");
        }
        json.append('"').append(key).append("\": ").append(value);
        return this;
    }

    /**
     * One write of the whole line: System.out's 128-byte buffer would hand a longer line to the pipe
     * in pieces, and the driver's log lines on stderr, merged into the same log (one SSH channel),
     * could land between them. A single write under the pipe's 4 KB atomic limit cannot be split.
     */
    void print() {
        byte[] line = ("SBCLAB_RESULT " + json + "}\n").getBytes(StandardCharsets.UTF_8);
        System.out.write(line, 0, line.length);
        System.out.flush();
    }
}
