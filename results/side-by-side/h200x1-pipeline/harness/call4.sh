# call 2: install, start pipeline4 detached (it outlives this call), wait for it
set -u
bash .gpu/bin/bootstrap.sh install .gpu/wheels/b > $OUT/install.log 2>&1 || { echo install failed; tail $OUT/install.log; exit 1; }
tail -7 $OUT/install.log
mkdir -p /tmp/w && cp -r . /tmp/w/repo
(cd /tmp/w/repo && setsid nohup bash .gpu/bin/pipeline4.sh > /tmp/w/nohup.log 2>&1 < /dev/null &)
sleep 3
bash .gpu/bin/wait4.sh ${WAIT_S:-470}
