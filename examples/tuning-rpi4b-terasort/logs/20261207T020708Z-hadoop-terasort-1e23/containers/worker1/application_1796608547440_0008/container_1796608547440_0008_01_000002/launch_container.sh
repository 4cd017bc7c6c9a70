#!/bin/bash

set -o pipefail -e
export PRELAUNCH_OUT="/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/prelaunch.out"
exec >"${PRELAUNCH_OUT}"
export PRELAUNCH_ERR="/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/prelaunch.err"
exec 2>"${PRELAUNCH_ERR}"
echo "Setting up env variables"
export JAVA_HOME=${JAVA_HOME:-"/usr/lib/jvm/java-17-openjdk-amd64"}
export HADOOP_CONF_DIR=${HADOOP_CONF_DIR:-"/root/.sbclab/clusters/tune17/nodes/worker1/conf"}
export HADOOP_HOME=${HADOOP_HOME:-"/root/.sbclab/cache/hadoop-3.4.2"}
export PATH=${PATH:-"/usr/local/go/bin:/root/go/bin:/root/.cargo/bin:/root/.cargo/bin:/root/.pyenv/plugins/pyenv-virtualenv/shims:/root/.pyenv/shims:/root/.pyenv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
export LANG=${LANG:-"C.UTF-8"}
export HADOOP_TOKEN_FILE_LOCATION="/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0008/container_1796608547440_0008_01_000002/container_tokens"
export CONTAINER_ID="container_1796608547440_0008_01_000002"
export NM_PORT="40183"
export NM_HOST="worker1"
export NM_HTTP_PORT="8042"
export LOCAL_DIRS="/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0008"
export LOCAL_USER_DIRS="/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/"
export LOG_DIRS="/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002"
export USER="root"
export LOGNAME="root"
export HOME="/home/"
export PWD="/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0008/container_1796608547440_0008_01_000002"
export LOCALIZATION_COUNTERS="0,537036,0,3,1"
export JVM_PID="$$"
export NM_AUX_SERVICE_mapreduce_shuffle="AAA0+gAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
export STDOUT_LOGFILE_ENV="/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/stdout"
export SHELL="/bin/bash"
export HADOOP_ROOT_LOGGER="INFO,console"
export CLASSPATH="$PWD:$HADOOP_CONF_DIR:/root/.sbclab/cache/hadoop-3.4.2/lib/*:$HADOOP_CONF_DIR:/root/.sbclab/cache/hadoop-3.4.2/lib/*:job.jar/*:job.jar/classes/:job.jar/lib/*:$PWD/*"
export LD_LIBRARY_PATH="$PWD:$HADOOP_COMMON_HOME/lib/native"
export STDERR_LOGFILE_ENV="/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/stderr"
export HADOOP_CLIENT_OPTS=""
export MALLOC_ARENA_MAX=""
echo "Setting up job resources"
ln -sf -- "/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0008/filecache/11/job.jar" "job.jar"
ln -sf -- "/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0008/filecache/13/job.xml" "job.xml"
ln -sf -- "/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/filecache/13/_partition.lst" "_partition.lst"
echo "Copying debugging information"
# Creating copy of launch script
cp "launch_container.sh" "/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/launch_container.sh"
chmod 640 "/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/launch_container.sh"
# Determining directory contents
echo "ls -l:" 1>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/directory.info"
ls -l 1>>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/directory.info"
echo "find -L . -maxdepth 5 -ls:" 1>>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/directory.info"
find -L . -maxdepth 5 -ls 1>>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/directory.info"
echo "broken symlinks(find -L . -maxdepth 5 -type l -ls):" 1>>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/directory.info"
find -L . -maxdepth 5 -type l -ls 1>>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/directory.info"
echo "Launching container"
exec /bin/bash -c "$JAVA_HOME/bin/java -Djava.net.preferIPv4Stack=true -Dhadoop.metrics.log.level=WARN -XX:TieredStopAtLevel=1 -XX:+UseSerialGC  -Xmx820m --add-opens=java.base/java.lang=ALL-UNNAMED --add-exports=java.base/sun.net.dns=ALL-UNNAMED --add-exports=java.base/sun.net.util=ALL-UNNAMED -Djava.io.tmpdir=$PWD/tmp -Dlog4j.configuration=container-log4j.properties -Dyarn.app.container.log.dir=/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002 -Dyarn.app.container.log.filesize=0 -Dhadoop.root.logger=INFO,CLA -Dhadoop.root.logfile=syslog org.apache.hadoop.mapred.YarnChild 10.213.0.11 38513 attempt_1796608547440_0008_m_000000_0 2 1>/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/stdout 2>/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0008/container_1796608547440_0008_01_000002/stderr "
