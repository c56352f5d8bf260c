package sampleworker

// LambdaConcurrency is how many records (message groups, for FIFO) one
// invocation of the deployed worker handles at once: each waits on DynamoDB
// for its ledger entry, so a batch handled one record after the other would
// spend most of its time waiting. The local event source mapping
// (`agentdlq work`, the demo and the load bench) uses the same number, so
// that what runs locally is what deploys.
const LambdaConcurrency = 16
