// Package disk is the embedded blob.Store: blobs are files in a directory.
//
// Layout under the directory given to Open:
//
//	lock            held with flock(2) while a Store is open (Linux), so a
//	                second process cannot delete the first one's writes
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
// Durability protocol of a Put (Linux; other systems use the os package's
// equivalents): open(tmp/<id>, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600);
// write(2) in chunks of 1 MiB from a pooled buffer, checking the context
// between chunks; fdatasync; close; rename(2) to data/xx/yy/<id>; fsync of
// data/xx/yy. Put returns only after that directory fsync, which with group
// commit (the default) is shared: an fsync started after a Put's rename
// completes it, and one running fsync serves every Put that renamed while the
// previous one ran. A leaf directory is created on first use in a process
// with mkdir and an fsync of its parent (likewise for data/xx). A Put that
// fails — reader error, cancelled context, full disk — removes its temp file
// and returns the error. Delete unlinks without a directory fsync: after a
// power cut a deleted blob may reappear, which the object index (the owner
// of ids) treats as garbage.
//
// A Reader is the open *os.File: ReadAt is pread(2) and safe for concurrent
// use; Size is the size at Open.
package disk
