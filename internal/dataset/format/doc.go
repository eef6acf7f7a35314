// Package format reads a dataset's files — ImageFolder, image+txt, PASCAL
// VOC, YOLO, COCO and ModelArts manifests — into samples and a class list,
// detects which layout a tree is in, and validates it: every finding names
// the object (and the line or JSON path in a text file), the rule, and how
// to fix it. It is pure: the listing and a ReadHead function come in,
// samples and findings go out; no Python, no full image decode.
package format
