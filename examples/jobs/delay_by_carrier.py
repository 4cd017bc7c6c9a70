"""Mean arrival delay by carrier, over the airline data sbclab generates (the 29 columns of the ASA Data
Expo files, no header): a PySpark analysis a class can start from.

Usage: spark-submit delay_by_carrier.py INPUT OUTPUT
Writes OUTPUT as CSV lines: carrier,flights,mean arrival delay in minutes (flights without a delay, "NA",
are left out).
"""

import sys

from pyspark.sql import SparkSession, functions as F

COLUMNS = ["Year", "Month", "DayofMonth", "DayOfWeek", "DepTime", "CRSDepTime", "ArrTime", "CRSArrTime",
           "UniqueCarrier", "FlightNum", "TailNum", "ActualElapsedTime", "CRSElapsedTime", "AirTime", "ArrDelay",
           "DepDelay", "Origin", "Dest", "Distance", "TaxiIn", "TaxiOut", "Cancelled", "CancellationCode", "Diverted",
           "CarrierDelay", "WeatherDelay", "NASDelay", "SecurityDelay", "LateAircraftDelay"]


def main(source: str, output: str) -> None:
    spark = SparkSession.builder.appName("mean arrival delay by carrier").getOrCreate()
    flights = spark.read.csv(source).toDF(*COLUMNS)
    delays = (flights.where((F.col("Year") != "Year") & (F.col("ArrDelay") != "NA"))
              .groupBy("UniqueCarrier")
              .agg(F.count("*").alias("flights"), F.avg(F.col("ArrDelay").cast("double")).alias("mean_arr_delay"))
              .orderBy("UniqueCarrier"))
    delays.write.csv(output)
    for row in delays.collect():
        print(f"{row.UniqueCarrier}: {row.flights} flights, mean arrival delay {row.mean_arr_delay:.2f} min")
    spark.stop()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: delay_by_carrier.py INPUT OUTPUT")
    main(sys.argv[1], sys.argv[2])
