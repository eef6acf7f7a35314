// Package disk is the embedded blob.Store: blobs are files in a directory.
//
// Layout under the directory given to Open:
//
//	lock            held with flock(2) while a Store is open, so a second
//	                store cannot delete the first one's writes in progress
//	tmp/<id>        a Put in progress; anything here when Open runs is a
//	                crash leftover and is removed
//	data/xx/yy/<id> a blob; xx and yy are the first two pairs of the id
//
// Ids are 36 lowercase hex digits: a two-byte fan-out shard (xx, yy)
// followed by 16 bytes from crypto/rand. The store picks the shard, not the
// caller: consecutive Puts share a leaf directory for a run of 256 and then
// move to the next of the 65,536, so directories fill evenly, the cache of
// existing directories stays hot, and concurrent Puts into one directory can
// share its fsync. Ids are never derived from input, and Open and Delete
// reject anything that is not of this exact form, so no id can name a path
// outside data/.
//
// Durability protocol of a Put on Linux (elsewhere the os package's
// equivalents, and File.Sync for fdatasync):
//
//	open(tmp/<id>, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600)
//	write(2) per 1 MiB of input (a pooled buffer, 4 KiB-aligned; the
//	  context is checked between buffers): the first through the page
//	  cache; the next ones, when the body goes on, with O_DIRECT set
//	  (fcntl F_SETFL; see WithDirectIO), except a last piece that is not
//	  a multiple of 4 KiB; sync_file_range(SYNC_FILE_RANGE_WRITE) starts
//	  the write-out of what went through the page cache (per 8 MiB of
//	  it, and before the first direct write). From the second buffer on,
//	  a writer goroutine writes each full buffer while the Put reads (and
//	  its caller hashes) the next: two buffers in flight, so the body and
//	  the disk work at the same time; a failure on either side stops both.
//	  These two buffers share one 2 MiB region the kernel is asked to
//	  back with a transparent huge page (MADV_HUGEPAGE), so that each
//	  direct write goes to the disk as one request
//	fdatasync, close
//	rename(tmp/<id>, data/xx/yy/<id>)
//	open(data/xx/yy, O_RDONLY|O_DIRECTORY), fsync, close
//
// A file system that refuses O_DIRECT (tmpfs) gets every write through the
// page cache: the Store remembers the first refusal.
//
// Put returns only after a directory fsync that started after its rename.
// With group commit (the default; see WithGroupCommit) concurrent Puts into
// one directory share one: while an fsync runs, the Puts that rename join
// the next, which one of them runs for all. A leaf directory is created on first use in a process
// with mkdir and an fsync of its parent (likewise for data/xx), once per 256
// Puts at most. A Put that fails — reader error, cancelled context, full
// disk — removes its temp file and returns the error; after a crash, Open
// removes what is left in tmp/, and data/ holds only complete blobs.
//
// A full file system (ENOSPC, or EDQUOT) is an error of kind errs.NoSpace.
// WithReserve keeps part of the file system free for what shares it (the
// metadata database, which deletes write to): statfs(2) is asked before a
// Put begins and after every 1 MiB it writes, and the Put fails with kind
// NoSpace once less than the reserve is available, so concurrent Puts eat
// at most about 1 MiB each into it. Delete (unlink) needs no space. Delete
// unlinks without a directory fsync: after a power cut a deleted blob may
// reappear, unreferenced, for whoever owns the ids (the object index) to
// collect.
//
// A Reader is the open *os.File: ReadAt is pread(2) and safe for concurrent
// use; Size is the size at Open.
package disk
