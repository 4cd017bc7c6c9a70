#!/bin/bash

set -o pipefail -e
export PRELAUNCH_OUT="/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/prelaunch.out"
exec >"${PRELAUNCH_OUT}"
export PRELAUNCH_ERR="/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/prelaunch.err"
exec 2>"${PRELAUNCH_ERR}"
echo "Setting up env variables"
export JAVA_HOME=${JAVA_HOME:-"/usr/lib/jvm/java-17-openjdk-amd64"}
export HADOOP_CONF_DIR=${HADOOP_CONF_DIR:-"/root/.sbclab/clusters/tune17/nodes/worker1/conf"}
export HADOOP_HOME=${HADOOP_HOME:-"/root/.sbclab/cache/hadoop-3.4.2"}
export PATH=${PATH:-"/usr/local/go/bin:/root/go/bin:/root/.cargo/bin:/root/.cargo/bin:/root/.pyenv/plugins/pyenv-virtualenv/shims:/root/.pyenv/shims:/root/.pyenv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
export LANG=${LANG:-"C.UTF-8"}
export HADOOP_TOKEN_FILE_LOCATION="/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0012/container_1796608547440_0012_01_000001/container_tokens"
export CONTAINER_ID="container_1796608547440_0012_01_000001"
export NM_PORT="40183"
export NM_HOST="worker1"
export NM_HTTP_PORT="8042"
export LOCAL_DIRS="/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0012"
export LOCAL_USER_DIRS="/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/"
export LOG_DIRS="/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001"
export USER="root"
export LOGNAME="root"
export HOME="/home/"
export PWD="/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0012/container_1796608547440_0012_01_000001"
export LOCALIZATION_COUNTERS="537694,0,5,0,1186"
export JVM_PID="$$"
export NM_AUX_SERVICE_mapreduce_shuffle="AAA0+gAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
export APPLICATION_WEB_PROXY_BASE="/proxy/application_1796608547440_0012"
export SHELL="/bin/bash"
export CLASSPATH="$PWD:$HADOOP_CONF_DIR:/root/.sbclab/cache/hadoop-3.4.2/lib/*:$HADOOP_CONF_DIR:/root/.sbclab/cache/hadoop-3.4.2/lib/*:job.jar/*:job.jar/classes/:job.jar/lib/*:$PWD/*"
export APP_SUBMIT_TIME_ENV="1796609604942"
export LD_LIBRARY_PATH="$PWD:$HADOOP_COMMON_HOME/lib/native"
export MALLOC_ARENA_MAX=""
echo "Setting up job resources"
mkdir -p jobSubmitDir
ln -sf -- "/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0012/filecache/10/job.splitmetainfo" "jobSubmitDir/job.splitmetainfo"
ln -sf -- "/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0012/filecache/11/job.jar" "job.jar"
ln -sf -- "/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0012/filecache/13/job.xml" "job.xml"
ln -sf -- "/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/filecache/15/_partition.lst" "_partition.lst"
mkdir -p jobSubmitDir
ln -sf -- "/root/.sbclab/clusters/tune17/nodes/worker1/disk/yarn/local/usercache/root/appcache/application_1796608547440_0012/filecache/12/job.split" "jobSubmitDir/job.split"
echo "Copying debugging information"
# Creating copy of launch script
cp "launch_container.sh" "/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/launch_container.sh"
chmod 640 "/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/launch_container.sh"
# Determining directory contents
echo "ls -l:" 1>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/directory.info"
ls -l 1>>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/directory.info"
echo "find -L . -maxdepth 5 -ls:" 1>>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/directory.info"
find -L . -maxdepth 5 -ls 1>>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/directory.info"
echo "broken symlinks(find -L . -maxdepth 5 -type l -ls):" 1>>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/directory.info"
find -L . -maxdepth 5 -type l -ls 1>>"/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/directory.info"
echo "Launching container"
exec /bin/bash -c "$JAVA_HOME/bin/java -Djava.io.tmpdir=$PWD/tmp -Dlog4j.configuration=container-log4j.properties -Dyarn.app.container.log.dir=/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001 -Dyarn.app.container.log.filesize=0 -Dhadoop.root.logger=INFO,CLA -Dhadoop.root.logfile=syslog --add-opens=java.base/java.lang=ALL-UNNAMED -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx576m --add-opens=java.base/java.lang=ALL-UNNAMED --add-exports=java.base/sun.net.dns=ALL-UNNAMED --add-exports=java.base/sun.net.util=ALL-UNNAMED org.apache.hadoop.mapreduce.v2.app.MRAppMaster 1>/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/stdout 2>/root/.sbclab/logs/tune17/worker1/userlogs/application_1796608547440_0012/container_1796608547440_0012_01_000001/stderr "
