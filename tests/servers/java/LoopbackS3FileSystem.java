/*
 * A Hadoop FileSystem for s3:// and s3a:// in the test metastore (see ../hms.py), in place of
 * hadoop-aws's S3AFileSystem, which cannot be downloaded here (no Maven; the pyspark wheel has
 * no S3 connector).
 *
 * It does what S3A does for the calls the metastore makes on a table location, against a real
 * S3 API (the suite's moto server) through s3/LoopbackS3Client.java (path-style, SigV4):
 * getFileStatus (HEAD the key, else list the prefix "key/"), listStatus (ListObjectsV2 with
 * delimiter "/", every page), mkdirs (an empty directory-marker object "key/", as S3A writes)
 * and delete (every object under the prefix). It reads S3A's own settings: fs.s3a.endpoint,
 * fs.s3a.endpoint.region, fs.s3a.access.key, fs.s3a.secret.key. Reading and writing file
 * contents and renames are not implemented: the metastore does not need them for external
 * tables.
 */

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import lancesync.testing.LoopbackS3Client;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

public final class LoopbackS3FileSystem extends FileSystem {
  private static final int PAGE = 1000;

  private URI uri;
  private String bucket;
  private LoopbackS3Client s3;
  private Path workingDirectory;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
    bucket = name.getHost();
    if (bucket == null) {
      throw new IOException("no bucket in " + name);
    }
    uri = URI.create(name.getScheme() + "://" + bucket);
    String endpoint = conf.getTrimmed("fs.s3a.endpoint", "");
    if (endpoint.isEmpty()) {
      throw new IOException("fs.s3a.endpoint is not set");
    }
    s3 = new LoopbackS3Client(endpoint, conf.getTrimmed("fs.s3a.endpoint.region", "us-east-1"),
        conf.getTrimmed("fs.s3a.access.key", ""), conf.getTrimmed("fs.s3a.secret.key", ""));
    workingDirectory = new Path(uri.toString() + "/");
  }

  @Override
  public String getScheme() {
    return uri == null ? "s3a" : uri.getScheme();
  }

  @Override
  public URI getUri() {
    return uri;
  }

  @Override
  public Path getWorkingDirectory() {
    return workingDirectory;
  }

  @Override
  public void setWorkingDirectory(Path directory) {
    workingDirectory = directory;
  }

  // --- what the metastore uses --------------------------------------------------------------

  @Override
  public FileStatus getFileStatus(Path path) throws IOException {
    Path qualified = makeQualified(path);
    String key = keyOf(qualified);
    if (key.isEmpty()) {
      return directory(qualified);
    }
    Long length = s3.head(bucket, key);
    if (length != null) {
      return new FileStatus(length, false, 1, 0, 0, qualified);
    }
    LoopbackS3Client.Listing listing = s3.list(bucket, key + "/", null, null, 1);
    if (!listing.keys.isEmpty() || !listing.prefixes.isEmpty()) {
      return directory(qualified);
    }
    throw new FileNotFoundException("No such file or directory: " + qualified);
  }

  @Override
  public FileStatus[] listStatus(Path path) throws IOException {
    FileStatus status = getFileStatus(path);
    if (!status.isDirectory()) {
      return new FileStatus[] {status};
    }
    String key = keyOf(makeQualified(path));
    String prefix = key.isEmpty() ? "" : key + "/";
    List<FileStatus> entries = new ArrayList<>();
    String token = null;
    do {
      LoopbackS3Client.Listing listing = s3.list(bucket, prefix, "/", token, PAGE);
      for (Map.Entry<String, Long> entry : listing.keys.entrySet()) {
        if (!entry.getKey().equals(prefix)) { // the directory marker itself
          entries.add(new FileStatus(entry.getValue(), false, 1, 0, 0, child(entry.getKey())));
        }
      }
      for (String child : listing.prefixes) {
        entries.add(directory(child(child.replaceAll("/+$", ""))));
      }
      token = listing.nextToken;
    } while (token != null);
    return entries.toArray(new FileStatus[0]);
  }

  @Override
  public boolean mkdirs(Path path, FsPermission permission) throws IOException {
    Path qualified = makeQualified(path);
    try {
      if (!getFileStatus(qualified).isDirectory()) {
        throw new FileAlreadyExistsException("a file is at " + qualified);
      }
    } catch (FileNotFoundException missing) {
      s3.put(bucket, keyOf(qualified) + "/", new byte[0]);
    }
    return true;
  }

  @Override
  public boolean delete(Path path, boolean recursive) throws IOException {
    FileStatus status;
    try {
      status = getFileStatus(path);
    } catch (FileNotFoundException missing) {
      return false;
    }
    String key = keyOf(makeQualified(path));
    List<String> doomed = new ArrayList<>();
    if (status.isDirectory()) {
      String token = null;
      do {
        LoopbackS3Client.Listing listing = s3.list(bucket, key.isEmpty() ? "" : key + "/", null, token, PAGE);
        doomed.addAll(listing.keys.keySet());
        token = listing.nextToken;
      } while (token != null);
      if (!recursive && doomed.stream().anyMatch(k -> !k.equals(key + "/"))) {
        throw new IOException("directory not empty: " + path);
      }
    } else {
      doomed.add(key);
    }
    for (String gone : doomed) {
      s3.delete(bucket, gone);
    }
    return true;
  }

  // --- not needed by the metastore for external tables ----------------------------------------

  @Override
  public FSDataInputStream open(Path path, int bufferSize) throws IOException {
    throw new UnsupportedOperationException("LoopbackS3FileSystem does not read files");
  }

  @Override
  public FSDataOutputStream create(Path path, FsPermission permission, boolean overwrite, int bufferSize,
      short replication, long blockSize, Progressable progress) throws IOException {
    throw new UnsupportedOperationException("LoopbackS3FileSystem does not write files");
  }

  @Override
  public FSDataOutputStream append(Path path, int bufferSize, Progressable progress) throws IOException {
    throw new UnsupportedOperationException("LoopbackS3FileSystem does not append");
  }

  @Override
  public boolean rename(Path source, Path destination) throws IOException {
    throw new UnsupportedOperationException("LoopbackS3FileSystem does not rename");
  }

  private static FileStatus directory(Path path) {
    return new FileStatus(0, true, 1, 0, 0, path);
  }

  private Path child(String key) {
    return new Path(uri.toString() + "/" + key);
  }

  private static String keyOf(Path qualified) {
    return qualified.toUri().getPath().replaceAll("^/+", "").replaceAll("/+$", "");
  }
}
