package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3API is what the S3 destination needs of S3.
type S3API interface {
	PutObject(ctx context.Context, params *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	ListObjectsV2(ctx context.Context, params *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, params *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// S3 is a Destination in an S3 bucket under an optional key prefix.
type S3 struct {
	API    S3API
	Bucket string
	// Prefix is prepended to every key ("" or ending in "/").
	Prefix string
}

// Parse reads a destination: "s3://bucket[/prefix]" (needs an
// S3API) or a folder path.
func Parse(dest string, api S3API) (Destination, error) {
	if rest, ok := strings.CutPrefix(dest, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, fmt.Errorf("%w: destination %q names no bucket", ErrBadDestination, dest)
		}
		if api == nil {
			return nil, fmt.Errorf("%w: destination %q needs an S3 client", ErrBadDestination, dest)
		}
		prefix = strings.Trim(prefix, "/")
		if prefix != "" {
			prefix += "/"
		}
		return &S3{API: api, Bucket: bucket, Prefix: prefix}, nil
	}
	if strings.Contains(dest, "://") || strings.TrimSpace(dest) == "" {
		return nil, fmt.Errorf("%w: %q is neither a folder nor s3://bucket/prefix", ErrBadDestination, dest)
	}
	return Folder{Root: dest}, nil
}

func (d *S3) String() string { return "s3://" + d.Bucket + "/" + d.Prefix }

// Put writes the object of key under the prefix.
func (d *S3) Put(ctx context.Context, key string, data []byte, contentType string) error {
	_, err := d.API.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(d.Bucket), Key: aws.String(d.Prefix + key),
		Body: bytes.NewReader(data), ContentType: aws.String(contentType), ContentLength: aws.Int64(int64(len(data))),
	})
	return err
}

// List returns the keys under the prefix that start with prefix, every
// page of them.
func (d *S3) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	in := &s3.ListObjectsV2Input{Bucket: aws.String(d.Bucket), Prefix: aws.String(d.Prefix + prefix)}
	for {
		out, err := d.API.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, o := range out.Contents {
			keys = append(keys, strings.TrimPrefix(aws.ToString(o.Key), d.Prefix))
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return keys, nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// Get returns the object of key under the prefix.
func (d *S3) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := d.API.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(d.Bucket), Key: aws.String(d.Prefix + key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}
