"""The software on a cluster: Hadoop and Spark distributions, a Java runtime, rendered configs, daemons."""
