package org.sbclab.jobs;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;

/**
 * PageRank as MapReduce, one job an iteration: the counterpart of the Spark PageRank on the same
 * adjacency lists ({@code node<TAB>dst,dst,...}, every node with at least one out-link, so no rank
 * is left dangling).
 *
 * <p>Each iteration's map sends a node's rank, split evenly, along its out-links and passes its links
 * on; the reduce sums what reached a node: rank = (1 - d) / N + d * sum. The first iteration reads
 * the lists without ranks and starts every node at 1 / N; each later one reads the last one's
 * {@code node<TAB>rank<TAB>links}. The last iteration writes to the output; the ones between are
 * removed.
 *
 * <p>Usage: {@code hadoop jar sbclab-jobs.jar org.sbclab.jobs.PageRankMR <input> <output> <iterations>
 * <nodes> <damping> <reduces>}. Prints {@code SBCLAB_RESULT {...}} with the iterations run.
 */
public final class PageRankMR {
    private static final String NODES = "sbclab.pagerank.nodes";
    private static final String DAMPING = "sbclab.pagerank.damping";

    private PageRankMR() {}

    /** Passes a node's links on ("L" + links) and its rank's share to each of them ("R" + share). */
    public static final class Spread extends Mapper<LongWritable, Text, Text, Text> {
        private double start;

        @Override
        protected void setup(Context context) {
            start = 1.0 / context.getConfiguration().getLong(NODES, 1);
        }

        @Override
        protected void map(LongWritable offset, Text line, Context context) throws IOException, InterruptedException {
            String[] fields = line.toString().split("\t");
            if (fields.length < 2) {
                return;
            }
            String links = fields[fields.length - 1];
            double rank = fields.length == 3 ? Double.parseDouble(fields[1]) : start;
            context.write(new Text(fields[0]), new Text("L" + links));
            String[] targets = links.split(",");
            Text share = new Text("R" + (rank / targets.length));
            for (String target : targets) {
                context.write(new Text(target), share);
            }
        }
    }

    /** A node's new rank from the shares that reached it, with its links for the next iteration. */
    public static final class Gather extends Reducer<Text, Text, Text, Text> {
        private double base;
        private double damping;

        @Override
        protected void setup(Context context) {
            Configuration conf = context.getConfiguration();
            damping = Double.parseDouble(conf.get(DAMPING));
            base = (1.0 - damping) / conf.getLong(NODES, 1);
        }

        @Override
        protected void reduce(Text node, Iterable<Text> values, Context context) throws IOException, InterruptedException {
            double sum = 0.0;
            String links = null;
            for (Text value : values) {
                String text = value.toString();
                if (text.charAt(0) == 'L') {
                    links = text.substring(1);
                } else {
                    sum += Double.parseDouble(text.substring(1));
                }
            }
            if (links != null) {  // every node has links: a share for a node not in the lists is dropped
                context.write(node, new Text((base + damping * sum) + "\t" + links));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: PageRankMR <input> <output> <iterations> <nodes> <damping> <reduces>");
            System.exit(2);
        }
        int iterations = Integer.parseInt(args[2]);
        Configuration conf = new Configuration();
        conf.setLong(NODES, Long.parseLong(args[3]));
        conf.set(DAMPING, args[4]);
        int reduces = Integer.parseInt(args[5]);
        Path output = new Path(args[1]);
        Path between = new Path(args[1] + "-iterations");
        Path input = new Path(args[0]);
        FileSystem fs = FileSystem.get(conf);
        try {
            for (int i = 0; i < iterations; i++) {
                Path target = i == iterations - 1 ? output : new Path(between, "iteration-" + i);
                Job job = Job.getInstance(conf, "sbclab PageRank iteration " + (i + 1) + " of " + iterations);
                job.setJarByClass(PageRankMR.class);
                job.setMapperClass(Spread.class);
                job.setReducerClass(Gather.class);
                job.setOutputKeyClass(Text.class);
                job.setOutputValueClass(Text.class);
                job.setNumReduceTasks(reduces);
                FileInputFormat.addInputPath(job, input);
                FileOutputFormat.setOutputPath(job, target);
                if (!job.waitForCompletion(true)) {
                    System.err.println("PageRankMR: iteration " + (i + 1) + " failed");
                    System.exit(1);
                }
                input = target;
            }
        } finally {
            fs.delete(between, true);
        }
        new ResultLine().put("iterations", iterations).print();
    }
}
