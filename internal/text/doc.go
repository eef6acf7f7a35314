// Package text formats what messages and tables show the same way
// everywhere: sizes in binary units (Bytes), values clipped to a length
// (Clip), and counts with their noun (Plural, Count).
package text
