#!/bin/bash

set -o pipefail -e
export PRELAUNCH_OUT="/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/prelaunch.out"
exec >"${PRELAUNCH_OUT}"
export PRELAUNCH_ERR="/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/prelaunch.err"
exec 2>"${PRELAUNCH_ERR}"
echo "Setting up env variables"
export JAVA_HOME=${JAVA_HOME:-"/usr/lib/jvm/java-17-openjdk-amd64"}
export HADOOP_CONF_DIR=${HADOOP_CONF_DIR:-"/root/.sbclab/clusters/sweep/nodes/worker2/conf"}
export HADOOP_HOME=${HADOOP_HOME:-"/root/.sbclab/cache/hadoop-3.4.2"}
export PATH=${PATH:-"/usr/local/go/bin:/root/go/bin:/root/.cargo/bin:/root/.cargo/bin:/root/.pyenv/plugins/pyenv-virtualenv/shims:/root/.pyenv/shims:/root/.pyenv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
export LANG=${LANG:-"C.UTF-8"}
export HADOOP_TOKEN_FILE_LOCATION="/root/.sbclab/clusters/sweep/nodes/worker2/disk/yarn/local/usercache/root/appcache/application_1796551930942_0006/container_1796551930942_0006_01_000002/container_tokens"
export CONTAINER_ID="container_1796551930942_0006_01_000002"
export NM_PORT="35335"
export NM_HOST="worker2"
export NM_HTTP_PORT="8042"
export LOCAL_DIRS="/root/.sbclab/clusters/sweep/nodes/worker2/disk/yarn/local/usercache/root/appcache/application_1796551930942_0006"
export LOCAL_USER_DIRS="/root/.sbclab/clusters/sweep/nodes/worker2/disk/yarn/local/usercache/root/"
export LOG_DIRS="/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002"
export USER="root"
export LOGNAME="root"
export HOME="/home/"
export PWD="/root/.sbclab/clusters/sweep/nodes/worker2/disk/yarn/local/usercache/root/appcache/application_1796551930942_0006/container_1796551930942_0006_01_000002"
export LOCALIZATION_COUNTERS="0,185963,0,1,0"
export JVM_PID="$$"
export NM_AUX_SERVICE_mapreduce_shuffle="AAA0+gAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
export SPARK_YARN_STAGING_DIR="hdfs://10.214.0.10:8020/user/root/.sparkStaging/application_1796551930942_0006"
export PYTHONPATH="/root/.sbclab/cache/spark-4.2.0/python/lib/pyspark.zip:/root/.sbclab/cache/spark-4.2.0/python/lib/py4j-0.10.9.9-src.zip"
export SPARK_PREFER_IPV6="false"
export CLASSPATH="$PWD:$PWD/__spark_conf__:$PWD/__spark_libs__/*:/root/.sbclab/cache/spark-4.2.0/jars/*:$PWD/__spark_conf__/__hadoop_conf__"
export SPARK_USER="root"
export MALLOC_ARENA_MAX=""
echo "Setting up job resources"
ln -sf -- "/root/.sbclab/clusters/sweep/nodes/worker2/disk/yarn/local/usercache/root/filecache/12/__spark_conf__.zip" "__spark_conf__"
echo "Copying debugging information"
# Creating copy of launch script
cp "launch_container.sh" "/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/launch_container.sh"
chmod 640 "/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/launch_container.sh"
# Determining directory contents
echo "ls -l:" 1>"/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/directory.info"
ls -l 1>>"/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/directory.info"
echo "find -L . -maxdepth 5 -ls:" 1>>"/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/directory.info"
find -L . -maxdepth 5 -ls 1>>"/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/directory.info"
echo "broken symlinks(find -L . -maxdepth 5 -type l -ls):" 1>>"/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/directory.info"
find -L . -maxdepth 5 -type l -ls 1>>"/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/directory.info"
echo "Launching container"
exec /bin/bash -c "$JAVA_HOME/bin/java -server -Xmx1024m '-Djava.net.preferIPv6Addresses=false' '-XX:+IgnoreUnrecognizedVMOptions' '--add-modules=jdk.incubator.vector' '--add-opens=java.base/java.lang=ALL-UNNAMED' '--add-opens=java.base/java.lang.invoke=ALL-UNNAMED' '--add-opens=java.base/java.lang.reflect=ALL-UNNAMED' '--add-opens=java.base/java.io=ALL-UNNAMED' '--add-opens=java.base/java.net=ALL-UNNAMED' '--add-opens=java.base/java.nio=ALL-UNNAMED' '--add-opens=java.base/java.util=ALL-UNNAMED' '--add-opens=java.base/java.util.concurrent=ALL-UNNAMED' '--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED' '--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED' '--add-opens=java.base/sun.nio.ch=ALL-UNNAMED' '--add-opens=java.base/sun.nio.cs=ALL-UNNAMED' '--add-opens=java.base/sun.security.action=ALL-UNNAMED' '--add-opens=java.base/sun.util.calendar=ALL-UNNAMED' '--add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED' '-Dio.netty.tryReflectionSetAccessible=true' '-Dio.netty.allocator.type=pooled' '-Dio.netty.handler.ssl.defaultEndpointVerificationAlgorithm=NONE' '--sun-misc-unsafe-memory-access=allow' '--enable-native-access=ALL-UNNAMED' -Djava.io.tmpdir=$PWD/tmp '-Dspark.history.ui.port=18080' '-Dspark.driver.port=41437' -Dspark.yarn.app.container.log.dir=/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002 -XX:OnOutOfMemoryError='kill %p' org.apache.spark.executor.YarnCoarseGrainedExecutorBackend --driver-url spark://CoarseGrainedScheduler@10.214.0.10:41437 --executor-id 1 --hostname worker2 --cores 2 --app-id application_1796551930942_0006 --resourceProfileId 0 1>/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/stdout 2>/root/.sbclab/logs/sweep/worker2/userlogs/application_1796551930942_0006/container_1796551930942_0006_01_000002/stderr"
