// Package export writes a dataset version in another layout —
// ImageFolder, PASCAL VOC, YOLO, COCO or a ModelArts manifest — as a list
// of files: the annotation files it generates, with their bytes, and the
// images, as references to the objects they copy (the caller copies them
// server-side). It is pure: samples in, files out.
package export
