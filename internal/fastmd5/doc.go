// Package fastmd5 hands out the MD5 hashes that compute the ETags of
// uploaded bodies. Where the CPU has AVX-512, large bodies hashed at the
// same time share the SIMD lanes of github.com/minio/md5-simd: up to 16
// independent MD5 streams advance together on one core. With its lanes
// kept full that costs, per byte, 0.42× the CPU of crypto/md5 for 8
// streams and 0.31× for 16 (measured on the 2-core AMD EPYC of bench/obs);
// a stream alone in the lanes costs more than crypto/md5 (1.3×: every 32
// KiB goes through md5-simd's server goroutine). In the server, where 8
// uploads also read sockets and write files, the lanes are not always
// full. A lane hash therefore hands its bytes to the server from a
// goroutine of its own, 1 MiB at a time from two stage buffers: the upload
// goes on reading while its last MiB waits for the server, and the server,
// which runs a round as soon as any lane has a block, finds the blocks of
// many uploads queued at once. Handed in line with the reads, one upload
// at a time, most rounds hashed one or two lanes of sixteen at the cost of
// all sixteen, and the lanes cost about what crypto/md5 does (bench/obs:
// 64 MiB PUTs at 8 concurrent rose from about 1.1x to about 1.2x MinIO's
// throughput; a gate that held hands until eight were waiting made it
// worse). Both compute the same digest: MD5 is a function of the bytes,
// whatever the implementation.
//
// A Pool decides per body, when it hands out the hash: a body of at least
// Options.MinSize bytes, or of unknown size, goes to the lanes when, with
// it, at least Options.MinStreams such bodies are being hashed; otherwise
// it gets crypto/md5. A lone large upload thus keeps crypto/md5. CPUs
// without AVX-512 (F and DQ, which md5-simd's 16-lane kernel uses) always
// get crypto/md5: md5-simd's AVX2 kernel runs 16 lanes as two goroutines
// of 8, which a machine with two cores cannot spare, and it was not
// measured here.
//
// md5-simd v1.1.2 needs care in a long-running server:
//
//   - Its server never forgets a hash that is closed (the client map is
//     keyed by an id the zero value of a closed channel does not carry),
//     and each of its rounds then visits every closed hash: a server that
//     had closed 20,000 hashes hashed 16 MiB 50 times slower. A Pool
//     never closes a lane's hash: it keeps at most 16, resets one when
//     its body is done and hands it out again.
//   - Its server is told about a queued block only when the block ends a
//     write or fills the queue: blocks left by writes that are not
//     multiples of 64 bytes, and Resets, are not told, and three of them
//     in a queue of three block the next write for good. A lane hash
//     gathers what it is given into 1 MiB (which also keeps its lane full
//     for 32 rounds: the server takes 32 KiB per stream and round) and
//     hands the server whole multiples of 64 bytes only, the last few
//     bytes of a body just before Sum; it resets only a hash that was
//     handed bytes, so at most one untold Reset waits, ahead of told
//     blocks. Write after Sum panics (Reset may follow).
//
// A Pool is safe for concurrent use; each hash it hands out is for one
// goroutine at a time. Close stops the lane hashes' goroutines and then
// md5-simd's.
package fastmd5
