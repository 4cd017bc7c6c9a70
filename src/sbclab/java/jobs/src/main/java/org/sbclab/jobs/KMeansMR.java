package org.sbclab.jobs;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
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
 * k-means (Lloyd's iterations) as MapReduce, one job an iteration: the counterpart of MLlib's k-means
 * on the same points ({@code x1,x2,...} per line).
 *
 * <p>The centres of an iteration travel in the job's configuration (k lines of coordinates); the map
 * assigns each point to its nearest centre and emits a partial sum ({@code count;s1,s2,...}), which a
 * combiner adds up on the map side and the reduce turns into the new centre. The driver reads the
 * reduce's output back for the next iteration; a centre no point chose stays where it was. It starts
 * from k points of the input's first ones chosen farthest-first, and stops after the iterations asked for or when no centre
 * moved further than the tolerance. The centres are written to {@code <output>/centres}.
 *
 * <p>Usage: {@code hadoop jar sbclab-jobs.jar org.sbclab.jobs.KMeansMR <input> <output> <k> <iterations>
 * <tolerance>}. Prints {@code SBCLAB_RESULT {...}} with the iterations run.
 */
public final class KMeansMR {
    private static final String CENTRES = "sbclab.kmeans.centres";
    private static final int SAMPLE = 2000;  // points the starting centres are chosen from

    private KMeansMR() {}

    static double[] parse(String line) {
        String[] parts = line.split(",");
        double[] point = new double[parts.length];
        for (int i = 0; i < parts.length; i++) {
            point[i] = Double.parseDouble(parts[i].trim());
        }
        return point;
    }

    static String format(double[] point) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < point.length; i++) {
            text.append(i == 0 ? "" : ",").append(point[i]);
        }
        return text.toString();
    }

    static List<double[]> centresOf(Configuration conf) {
        List<double[]> centres = new ArrayList<>();
        for (String line : conf.get(CENTRES).split("\n")) {
            centres.add(parse(line));
        }
        return centres;
    }

    /** Each point's nearest centre, as a partial sum of one point. */
    public static final class Assign extends Mapper<LongWritable, Text, IntWritable, Text> {
        private List<double[]> centres;

        @Override
        protected void setup(Context context) {
            centres = centresOf(context.getConfiguration());
        }

        @Override
        protected void map(LongWritable offset, Text line, Context context) throws IOException, InterruptedException {
            String text = line.toString().trim();
            if (text.isEmpty()) {
                return;
            }
            double[] point = parse(text);
            int best = 0;
            double nearest = Double.MAX_VALUE;
            for (int c = 0; c < centres.size(); c++) {
                double distance = 0.0;
                for (int i = 0; i < point.length; i++) {
                    double d = point[i] - centres.get(c)[i];
                    distance += d * d;
                }
                if (distance < nearest) {
                    nearest = distance;
                    best = c;
                }
            }
            context.write(new IntWritable(best), new Text("1;" + format(point)));
        }
    }

    static String added(Iterable<Text> partials) {
        long count = 0;
        double[] sum = null;
        for (Text partial : partials) {
            String[] parts = partial.toString().split(";");
            count += Long.parseLong(parts[0]);
            double[] values = parse(parts[1]);
            if (sum == null) {
                sum = new double[values.length];
            }
            for (int i = 0; i < values.length; i++) {
                sum[i] += values[i];
            }
        }
        return count + ";" + format(sum);
    }

    /** Partial sums of the same centre added on the map side. */
    public static final class Add extends Reducer<IntWritable, Text, IntWritable, Text> {
        @Override
        protected void reduce(IntWritable centre, Iterable<Text> partials, Context context)
                throws IOException, InterruptedException {
            context.write(centre, new Text(added(partials)));
        }
    }

    /** A centre's new place: the mean of the points that chose it. */
    public static final class Mean extends Reducer<IntWritable, Text, IntWritable, Text> {
        @Override
        protected void reduce(IntWritable centre, Iterable<Text> partials, Context context)
                throws IOException, InterruptedException {
            String[] total = added(partials).split(";");
            long count = Long.parseLong(total[0]);
            double[] sum = parse(total[1]);
            for (int i = 0; i < sum.length; i++) {
                sum[i] /= count;
            }
            context.write(centre, new Text(format(sum)));
        }
    }

    /**
     * k starting centres from a sample: its first point, then each time the point farthest from those
     * chosen (a deterministic start that puts one centre in each of well-separated groups, where the
     * first k points may fall in one).
     */
    static List<double[]> farthestFirst(List<String> sample, int k) {
        List<double[]> points = new ArrayList<>();
        for (String line : sample) {
            points.add(parse(line));
        }
        List<double[]> chosen = new ArrayList<>();
        chosen.add(points.get(0));
        while (chosen.size() < k && chosen.size() < points.size()) {
            double[] farthest = null;
            double most = -1.0;
            for (double[] point : points) {
                double nearest = Double.MAX_VALUE;
                for (double[] centre : chosen) {
                    double distance = 0.0;
                    for (int i = 0; i < point.length; i++) {
                        double d = point[i] - centre[i];
                        distance += d * d;
                    }
                    nearest = Math.min(nearest, distance);
                }
                if (nearest > most) {
                    most = nearest;
                    farthest = point;
                }
            }
            chosen.add(farthest);
        }
        return chosen;
    }

    static List<String> lines(FileSystem fs, Path folder, int most) throws IOException {
        List<String> found = new ArrayList<>();
        for (FileStatus file : fs.listStatus(folder)) {
            if (!file.getPath().getName().startsWith("part-")) {
                continue;
            }
            try (BufferedReader reader = new BufferedReader(
                    new InputStreamReader(fs.open(file.getPath()), StandardCharsets.UTF_8))) {
                for (String line = reader.readLine(); line != null && found.size() < most; line = reader.readLine()) {
                    if (!line.trim().isEmpty()) {
                        found.add(line.trim());
                    }
                }
            }
            if (found.size() >= most) {
                break;
            }
        }
        return found;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: KMeansMR <input> <output> <k> <iterations> <tolerance>");
            System.exit(2);
        }
        Path input = new Path(args[0]);
        Path output = new Path(args[1]);
        int k = Integer.parseInt(args[2]);
        int iterations = Integer.parseInt(args[3]);
        double tolerance = Double.parseDouble(args[4]);
        Configuration conf = new Configuration();
        FileSystem fs = FileSystem.get(conf);
        List<double[]> centres = farthestFirst(lines(fs, input, SAMPLE), k);
        Path between = new Path(args[1] + "-iterations");
        int ran = 0;
        try {
            for (int i = 0; i < iterations; i++) {
                StringBuilder given = new StringBuilder();
                for (double[] centre : centres) {
                    given.append(given.length() == 0 ? "" : "\n").append(format(centre));
                }
                conf.set(CENTRES, given.toString());
                Path target = new Path(between, "iteration-" + i);
                Job job = Job.getInstance(conf, "sbclab k-means iteration " + (i + 1));
                job.setJarByClass(KMeansMR.class);
                job.setMapperClass(Assign.class);
                job.setCombinerClass(Add.class);
                job.setReducerClass(Mean.class);
                job.setOutputKeyClass(IntWritable.class);
                job.setOutputValueClass(Text.class);
                FileInputFormat.addInputPath(job, input);
                FileOutputFormat.setOutputPath(job, target);
                if (!job.waitForCompletion(true)) {
                    System.err.println("KMeansMR: iteration " + (i + 1) + " failed");
                    System.exit(1);
                }
                ran = i + 1;
                double moved = 0.0;
                for (String line : lines(fs, target, Integer.MAX_VALUE)) {
                    String[] parts = line.split("\t");
                    int c = Integer.parseInt(parts[0]);
                    double[] next = parse(parts[1]);
                    double distance = 0.0;
                    for (int j = 0; j < next.length; j++) {
                        double d = next[j] - centres.get(c)[j];
                        distance += d * d;
                    }
                    moved = Math.max(moved, Math.sqrt(distance));
                    centres.set(c, next);
                }
                if (moved <= tolerance) {
                    break;
                }
            }
            StringBuilder text = new StringBuilder();
            for (double[] centre : centres) {
                text.append(format(centre)).append('\n');
            }
            try (java.io.OutputStream out = fs.create(new Path(output, "centres"), true)) {
                out.write(text.toString().getBytes(StandardCharsets.UTF_8));
            }
        } finally {
            fs.delete(between, true);
        }
        new ResultLine().put("iterations", ran).print();
    }
}
