package disk

// WithFreeSpace replaces statfs(2) as the measure of free space (tests).
func WithFreeSpace(free func(path string) (int64, error)) Option {
	return func(o *options) { o.free = free }
}

// DirectIO reports whether Puts may still write with O_DIRECT (tests).
func (s *Store) DirectIO() bool { return s.directOK != nil && s.directOK.Load() }
