# call 2 on the 2-GPU machine: install, start pipeline7 detached, wait for it
set -u
bash .gpu/bin/bootstrap.sh install .gpu/wheels/b > $OUT/install.log 2>&1 || { echo install failed; tail $OUT/install.log; exit 1; }
mkdir -p /tmp/w && cp -r . /tmp/w/repo
(cd /tmp/w/repo && setsid nohup bash .gpu/bin/pipeline7.sh > /tmp/w/nohup.log 2>&1 < /dev/null &)
sleep 3
bash .gpu/bin/wait7.sh ${WAIT_S:-500}
