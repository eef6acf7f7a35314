package disk

// WithFreeSpace replaces statfs(2) as the measure of free space (tests).
func WithFreeSpace(free func(path string) (int64, error)) Option {
	return func(o *options) { o.free = free }
}
