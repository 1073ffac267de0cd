# Reads a scheduled module and prints whether every stage's assigned peak
# (ratrain.peak_bytes) is at or below the plan's predicted peak (the plan
# attribute's peak_bytes: the planner's largest per-stage total):
#   agree stages=<n> offload=<none|optimizer|master>
# or "disagree stage=<s> assigned=<a> planner=<p>" for each stage over it.
match($0, /plan #ratrain.plan<[^>]*peak_bytes = [0-9]+/) && planner == "" {
  text = substr($0, RSTART, RLENGTH)
  sub(/.*peak_bytes = /, "", text)
  planner = text + 0
  offload = "none"
  if (match($0, /offload = [a-z]+/))
    offload = substr($0, RSTART + 10, RLENGTH - 10)
}
/ratrain\.stage [0-9]+ layers/ && match($0, /ratrain\.peak_bytes = [0-9]+/) {
  text = substr($0, RSTART, RLENGTH)
  sub(/.*= /, "", text)
  split($0, words, " ")
  stage = words[2]
  stages++
  if (text + 0 > planner) {
    print "disagree stage=" stage " assigned=" text " planner=" planner
    bad++
  }
}
END {
  if (!bad && stages > 0)
    print "agree stages=" stages " offload=" offload
}
