package api

// CachePolicy is what the server tells runners about the content cache of
// downloaded objects (work_dir/cache/policy.json): they trim it to
// MaxBytes, least recently used first (0: unbounded).
type CachePolicy struct {
	MaxBytes int64 `json:"max_bytes"`
}
