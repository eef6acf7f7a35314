package obs

import (
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/meta"
)

// The REST routes' view (/api/v1/obs/…) of buckets, objects and uploads.

// WireBucket is b as the REST API shows it.
func WireBucket(b *meta.Bucket) api.OBSBucket {
	return api.OBSBucket{Name: b.Name, Region: b.Region, CreateTime: b.CreateTime.UnixMilli(), HasPolicy: b.Policy != "", HasLifecycle: b.Lifecycle != ""}
}

// WireObject is o as the REST API shows it; Parts for a multipart object.
func WireObject(o *meta.Object) api.OBSObject {
	out := api.OBSObject{Key: o.Key, Size: o.Size, ETag: o.ETag, ContentType: o.ContentType, StorageClass: o.StorageClass, LastModified: o.LastModified.UnixMilli()}
	if strings.Contains(o.ETag, "-") {
		out.Parts = len(o.Blobs)
	}
	return out
}

// WireUpload is u as the REST API shows it, with the part sizes s accepts.
func (s *Service) WireUpload(u *meta.Upload) api.OBSUpload {
	min, max := s.PartSizes()
	return api.OBSUpload{UploadID: u.ID, Bucket: u.Bucket, Key: u.Key, Initiated: u.Initiated.UnixMilli(), MinPartSize: min, MaxPartSize: max, MaxParts: MaxPartNumber}
}
