package org.sbclab.jobs;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.mllib.clustering.KMeansModel;
import org.apache.spark.mllib.linalg.Vector;
import org.apache.spark.mllib.linalg.Vectors;

/**
 * MLlib's k-means (k-means|| start, Lloyd's iterations) on points written one a line as
 * {@code x1,x2,...}: the Spark side of sbclab's k-means, beside the MapReduce KMeansMR. The RDD-based
 * API is the one every stack's Spark has, 1.4 to 4.2. The centres are saved as text to
 * {@code <output>/centres}, one a line, for sbclab to compare with the ones the points were drawn
 * around.
 *
 * <p>Prints one machine-readable line, {@code SBCLAB_RESULT {...}}, with the points read.
 */
public final class KMeans {
    private KMeans() {}

    public static void main(String[] args) {
        if (args.length != 5) {
            System.err.println("usage: KMeans <input> <output> <k> <iterations> <seed>");
            System.exit(2);
        }
        int k = Integer.parseInt(args[2]);
        int iterations = Integer.parseInt(args[3]);
        long seed = Long.parseLong(args[4]);
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sbclab k-means"))) {
            JavaRDD<Vector> points = sc.textFile(args[0])
                    .filter(line -> !line.trim().isEmpty())
                    .map(line -> Vectors.dense(KMeansMR.parse(line)))
                    .cache();
            long count = points.count();
            // The builder: train()'s overloads differ between Spark 1 and the later ones.
            KMeansModel model = new org.apache.spark.mllib.clustering.KMeans().setK(k).setMaxIterations(iterations)
                    .setInitializationMode("k-means||").setSeed(seed).run(points.rdd());
            List<String> lines = new ArrayList<>();
            for (Vector centre : model.clusterCenters()) {
                lines.add(KMeansMR.format(centre.toArray()));
            }
            sc.parallelize(lines, 1).saveAsTextFile(args[1] + "/centres");
            new ResultLine().put("points", count).put("k", (long) k).print();
        }
    }
}
