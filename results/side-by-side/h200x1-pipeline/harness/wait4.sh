# wait4.sh SECONDS: wait for pipeline4 (at most SECONDS), copy what it wrote to $OUT, summarise
end=$((SECONDS + $1))
while [ ! -e /tmp/w/out/ALL_DONE ] && [ $SECONDS -lt $end ]; do sleep 2; done
tar czf $OUT/out.tgz -C /tmp/w out
cat /tmp/w/out/pipeline.log
tail -3 /tmp/w/nohup.log
