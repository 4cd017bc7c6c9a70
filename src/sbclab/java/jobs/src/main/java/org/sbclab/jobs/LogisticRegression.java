package org.sbclab.jobs;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.mllib.classification.LogisticRegressionModel;
import org.apache.spark.mllib.classification.LogisticRegressionWithLBFGS;
import org.apache.spark.mllib.linalg.Vectors;
import org.apache.spark.mllib.regression.LabeledPoint;

/**
 * MLlib's logistic regression (L-BFGS, with an intercept, unregularised) on labelled points written
 * one a line as {@code label,x1,x2,...}: the Spark side of sbclab's logistic regression, beside the
 * MapReduce LogisticRegressionMR. The RDD-based API is the one every stack's Spark has, 1.4 to 4.2.
 * The model is saved as text to {@code <output>/model}, one line {@code intercept,w1,w2,...}, for
 * sbclab to compare with the hyperplane the points were drawn about.
 *
 * <p>Prints one machine-readable line, {@code SBCLAB_RESULT {...}}, with the points read.
 */
public final class LogisticRegression {
    private static final double TOLERANCE = 1e-6;  // L-BFGS's relative change that ends it

    private LogisticRegression() {}

    public static void main(String[] args) {
        if (args.length != 3) {
            System.err.println("usage: LogisticRegression <input> <output> <iterations>");
            System.exit(2);
        }
        int iterations = Integer.parseInt(args[2]);
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sbclab logistic regression"))) {
            JavaRDD<LabeledPoint> points = sc.textFile(args[0])
                    .filter(line -> !line.trim().isEmpty())
                    .map(line -> {
                        double[] values = KMeansMR.parse(line);
                        return new LabeledPoint(values[0], Vectors.dense(Arrays.copyOfRange(values, 1, values.length)));
                    })
                    .cache();
            long count = points.count();
            LogisticRegressionWithLBFGS learner = new LogisticRegressionWithLBFGS();
            // Spark 1's default is no intercept; the hyperplane need not pass through the origin.
            learner.setIntercept(true);
            learner.optimizer().setNumIterations(iterations).setRegParam(0.0).setConvergenceTol(TOLERANCE);
            LogisticRegressionModel model = learner.run(points.rdd());
            double[] weights = model.weights().toArray();
            double[] fitted = new double[weights.length + 1];  // intercept first, as LogisticRegressionMR keeps it
            fitted[0] = model.intercept();
            System.arraycopy(weights, 0, fitted, 1, weights.length);
            List<String> lines = new ArrayList<>();
            lines.add(KMeansMR.format(fitted));
            sc.parallelize(lines, 1).saveAsTextFile(args[1] + "/model");
            new ResultLine().put("points", count).print();
        }
    }
}
