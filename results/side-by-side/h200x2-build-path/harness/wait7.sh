# wait5.sh SECONDS: wait for the pipeline (at most SECONDS), refreshing $OUT/out.tgz every 15 s
# (a call cut short by the device budget still returns what was written), then summarise
end=$((SECONDS + $1))
while [ ! -e /tmp/w/out/ALL_DONE ] && [ $SECONDS -lt $end ]; do
  tar czf $OUT/out.tgz.new -C /tmp/w out && mv $OUT/out.tgz.new $OUT/out.tgz; sleep 15
done
tar czf $OUT/out.tgz.new -C /tmp/w out && mv $OUT/out.tgz.new $OUT/out.tgz
cat /tmp/w/out/pipeline.log; tail -3 /tmp/w/nohup.log
