#!/bin/sh
# AWS Batch quota management for policy seed-demo, written by the planner.
# Run it where the JSON files are, with the AWS CLI v2 and AWS Batch permissions.
# Command-line options override the values read from --cli-input-json.
set -eu

wait_valid() {  # $1 describe command, $2 its name option, $3 the name, $4 the list in its output
  while :; do
    status=$(aws batch "$1" "$2" "$3" --query "$4[0].status" --output text)
    case "$status" in
      VALID) return 0 ;;
      INVALID) echo "$3 is INVALID" >&2; exit 1 ;;
    esac
    sleep 5
  done
}

aws batch create-service-environment --cli-input-json file://create-service-environment.json
wait_valid describe-service-environments --service-environments seed-demo serviceEnvironments
POLICY_ARN=$(aws batch create-scheduling-policy --cli-input-json file://create-scheduling-policy.json --query arn --output text)
aws batch create-job-queue --cli-input-json file://create-job-queue.json --scheduling-policy-arn "$POLICY_ARN"
wait_valid describe-job-queues --job-queues seed-demo jobQueues
aws batch create-quota-share --cli-input-json file://create-quota-share-QS1.json
aws batch create-quota-share --cli-input-json file://create-quota-share-QS2.json
aws batch create-quota-share --cli-input-json file://create-quota-share-QS3.json
