// The delivery pipeline: fan-out, workers, retry policy and the gateway senders.
