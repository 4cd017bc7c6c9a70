package org.sbclab.jobs;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;

/**
 * Logistic regression (with an intercept, unregularised) as MapReduce, one job an iteration of
 * Newton's method: the counterpart of MLlib's on the same points ({@code label,x1,x2,...} per line).
 *
 * <p>The model of an iteration ({@code intercept,w1,w2,...}) travels in the job's configuration.
 * Each map adds up, over its split, the log-likelihood's gradient and Hessian at that model and emits
 * them once when its split ends; one reduce adds the maps' sums. The driver solves Hessian · step = gradient and moves the model by the step. Newton's
 * method rather than gradient descent: it needs no step size, and from a zero model it reaches the
 * maximum likelihood in a handful of iterations (each a job, tens of seconds on a board) where
 * gradient descent takes hundreds. It stops after the iterations asked for or when no coordinate
 * of the step is larger than the tolerance. The model is written to {@code <output>/model}.
 *
 * <p>Usage: {@code hadoop jar sbclab-jobs.jar org.sbclab.jobs.LogisticRegressionMR <input> <output>
 * <iterations> <tolerance>}. Prints {@code SBCLAB_RESULT {...}} with the iterations run and the points.
 */
public final class LogisticRegressionMR {
    private static final String MODEL = "sbclab.logreg.model";
    // Added to the Hessian's diagonal, relative to its mean: keeps the solve defined when the points
    // (nearly) separate, where the likelihood's curvature vanishes; far below any real curvature.
    private static final double RIDGE = 1e-10;

    private LogisticRegressionMR() {}

    static double margin(double[] model, double[] features) {
        double z = model[0];
        for (int i = 0; i < features.length; i++) {
            z += model[i + 1] * features[i];
        }
        return z;
    }

    /** What one split (and then all of them) adds up for one Newton step. */
    static final class Sums {
        long points;
        final double[] gradient;
        final double[] hessian;  // the upper triangle, row by row: it is symmetric

        Sums(int size) {
            gradient = new double[size];
            hessian = new double[size * (size + 1) / 2];
        }

        void add(double[] model, double label, double[] features) {
            double z = margin(model, features);
            double p = z >= 0 ? 1.0 / (1.0 + Math.exp(-z)) : Math.exp(z) / (1.0 + Math.exp(z));
            double residual = p - label;
            double curvature = p * (1.0 - p);
            points++;
            int at = 0;
            for (int i = 0; i < gradient.length; i++) {
                double xi = i == 0 ? 1.0 : features[i - 1];
                gradient[i] += residual * xi;
                for (int j = i; j < gradient.length; j++) {
                    hessian[at++] += curvature * xi * (j == 0 ? 1.0 : features[j - 1]);
                }
            }
        }

        void add(Sums other) {
            points += other.points;
            for (int i = 0; i < gradient.length; i++) {
                gradient[i] += other.gradient[i];
            }
            for (int i = 0; i < hessian.length; i++) {
                hessian[i] += other.hessian[i];
            }
        }

        @Override
        public String toString() {
            return points + ";" + KMeansMR.format(gradient) + ";" + KMeansMR.format(hessian);
        }

        static Sums parse(String text) {
            String[] parts = text.split(";");
            double[] gradient = KMeansMR.parse(parts[1]);
            Sums sums = new Sums(gradient.length);
            sums.points = Long.parseLong(parts[0]);
            System.arraycopy(gradient, 0, sums.gradient, 0, gradient.length);
            double[] hessian = KMeansMR.parse(parts[2]);
            System.arraycopy(hessian, 0, sums.hessian, 0, hessian.length);
            return sums;
        }

        /** The Newton step: the solution of Hessian · step = gradient, by Cholesky's factorisation. */
        double[] step() {
            int n = gradient.length;
            double[][] lower = new double[n][n];
            double trace = 0.0;
            int at = 0;
            for (int i = 0; i < n; i++) {
                for (int j = i; j < n; j++) {
                    lower[j][i] = hessian[at++];
                }
                trace += lower[i][i];
            }
            double ridge = RIDGE * trace / n + Double.MIN_NORMAL;
            for (int j = 0; j < n; j++) {
                double diagonal = lower[j][j] + ridge;
                for (int k = 0; k < j; k++) {
                    diagonal -= lower[j][k] * lower[j][k];
                }
                if (!(diagonal > 0)) {
                    return null;
                }
                lower[j][j] = Math.sqrt(diagonal);
                for (int i = j + 1; i < n; i++) {
                    double value = lower[i][j];
                    for (int k = 0; k < j; k++) {
                        value -= lower[i][k] * lower[j][k];
                    }
                    lower[i][j] = value / lower[j][j];
                }
            }
            double[] y = new double[n];
            for (int i = 0; i < n; i++) {
                double value = gradient[i];
                for (int k = 0; k < i; k++) {
                    value -= lower[i][k] * y[k];
                }
                y[i] = value / lower[i][i];
            }
            double[] step = new double[n];
            for (int i = n - 1; i >= 0; i--) {
                double value = y[i];
                for (int k = i + 1; k < n; k++) {
                    value -= lower[k][i] * step[k];
                }
                step[i] = value / lower[i][i];
            }
            return step;
        }
    }

    /** A split's sums, emitted once at its end: one record a map, whatever its points. */
    public static final class Accumulate extends Mapper<LongWritable, Text, IntWritable, Text> {
        private double[] model;
        private Sums sums;

        @Override
        protected void setup(Context context) {
            model = KMeansMR.parse(context.getConfiguration().get(MODEL));
            sums = new Sums(model.length);
        }

        @Override
        protected void map(LongWritable offset, Text line, Context context) {
            String text = line.toString().trim();
            if (text.isEmpty()) {
                return;
            }
            double[] values = KMeansMR.parse(text);
            if (values.length != model.length) {
                throw new IllegalArgumentException("a point of " + (values.length - 1) + " features where the model has "
                        + (model.length - 1) + ": " + text);
            }
            double[] features = new double[values.length - 1];
            System.arraycopy(values, 1, features, 0, features.length);
            sums.add(model, values[0], features);
        }

        @Override
        protected void cleanup(Context context) throws IOException, InterruptedException {
            if (sums.points > 0) {
                context.write(new IntWritable(0), new Text(sums.toString()));
            }
        }
    }

    /** The maps' sums added up. */
    public static final class Total extends Reducer<IntWritable, Text, IntWritable, Text> {
        @Override
        protected void reduce(IntWritable key, Iterable<Text> partials, Context context)
                throws IOException, InterruptedException {
            Sums total = null;
            for (Text partial : partials) {
                Sums sums = Sums.parse(partial.toString());
                if (total == null) {
                    total = sums;
                } else {
                    total.add(sums);
                }
            }
            context.write(key, new Text(total.toString()));
        }
    }

    /** The features a point has: the first line's values less its label. */
    private static int features(FileSystem fs, Path input) throws IOException {
        List<String> first = KMeansMR.lines(fs, input, 1);
        if (first.isEmpty()) {
            throw new IllegalArgumentException("no points in " + input);
        }
        return KMeansMR.parse(first.get(0)).length - 1;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: LogisticRegressionMR <input> <output> <iterations> <tolerance>");
            System.exit(2);
        }
        Path input = new Path(args[0]);
        Path output = new Path(args[1]);
        int iterations = Integer.parseInt(args[2]);
        double tolerance = Double.parseDouble(args[3]);
        Configuration conf = new Configuration();
        FileSystem fs = FileSystem.get(conf);
        double[] model = new double[features(fs, input) + 1];
        Path between = new Path(args[1] + "-iterations");
        int ran = 0;
        long points = 0;
        try {
            for (int i = 0; i < iterations; i++) {
                conf.set(MODEL, KMeansMR.format(model));
                Path target = new Path(between, "iteration-" + i);
                Job job = Job.getInstance(conf, "sbclab logistic regression iteration " + (i + 1));
                job.setJarByClass(LogisticRegressionMR.class);
                job.setMapperClass(Accumulate.class);
                job.setReducerClass(Total.class);
                job.setNumReduceTasks(1);
                job.setOutputKeyClass(IntWritable.class);
                job.setOutputValueClass(Text.class);
                FileInputFormat.addInputPath(job, input);
                FileOutputFormat.setOutputPath(job, target);
                if (!job.waitForCompletion(true)) {
                    System.err.println("LogisticRegressionMR: iteration " + (i + 1) + " failed");
                    System.exit(1);
                }
                ran = i + 1;
                Sums sums = Sums.parse(KMeansMR.lines(fs, target, 1).get(0).split("\t")[1]);
                points = sums.points;
                double[] step = sums.step();
                double largest = 0.0;
                for (int j = 0; step != null && j < step.length; j++) {
                    largest = Math.max(largest, Math.abs(step[j]));
                }
                if (step == null || !Double.isFinite(largest)) {
                    System.err.println("LogisticRegressionMR: no Newton step at iteration " + (i + 1)
                            + ": the Hessian is not positive definite (do the classes separate?)");
                    System.exit(1);
                }
                for (int j = 0; j < model.length; j++) {
                    model[j] -= step[j];
                }
                if (largest <= tolerance) {
                    break;
                }
            }
            try (java.io.OutputStream out = fs.create(new Path(output, "model"), true)) {
                out.write((KMeansMR.format(model) + "\n").getBytes(StandardCharsets.UTF_8));
            }
        } finally {
            fs.delete(between, true);
        }
        new ResultLine().put("iterations", ran).put("points", points).print();
    }
}
