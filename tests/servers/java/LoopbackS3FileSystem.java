/*
 * A Hadoop FileSystem for s3:// and s3a:// in the test metastore (see ../hms.py), in place of
 * hadoop-aws's S3AFileSystem, which cannot be downloaded here (no Maven; the pyspark wheel has
 * no S3 connector).
 *
 * It does what S3A does for the calls the metastore makes on a table location, against a real
 * S3 API (the suite's moto server): getFileStatus (HEAD the key, else list the prefix
 * "key/"), listStatus (ListObjectsV2 with delimiter "/", every page), mkdirs (an empty
 * directory-marker object "key/", as S3A writes) and delete (every object under the prefix).
 * Requests are path-style and signed with AWS Signature V4 (UNSIGNED-PAYLOAD), with the
 * credentials of S3A's own settings: fs.s3a.endpoint, fs.s3a.endpoint.region,
 * fs.s3a.access.key, fs.s3a.secret.key. Reading and writing file contents and renames are not
 * implemented: the metastore does not need them for external tables.
 */

import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.xml.parsers.DocumentBuilderFactory;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public final class LoopbackS3FileSystem extends FileSystem {
  private static final DateTimeFormatter AMZ_DATE = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'");
  private static final int TIMEOUT_MS = 30_000;

  private URI uri;
  private String bucket;
  private String endpoint;
  private String region;
  private String accessKey;
  private String secretKey;
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
    endpoint = conf.getTrimmed("fs.s3a.endpoint", "").replaceAll("/+$", "");
    if (endpoint.isEmpty()) {
      throw new IOException("fs.s3a.endpoint is not set");
    }
    region = conf.getTrimmed("fs.s3a.endpoint.region", "us-east-1");
    accessKey = conf.getTrimmed("fs.s3a.access.key", "");
    secretKey = conf.getTrimmed("fs.s3a.secret.key", "");
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
    Response head = send("HEAD", "/" + bucket + "/" + key, new TreeMap<>(), null);
    if (head.status == 200) {
      long length = Long.parseLong(head.header("Content-Length", "0"));
      return new FileStatus(length, false, 1, 0, 0, qualified);
    }
    if (head.status != 404) {
      throw head.failure("HEAD " + key);
    }
    Listing listing = list(key + "/", null, null, 1);
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
    Path qualified = makeQualified(path);
    String key = keyOf(qualified);
    String prefix = key.isEmpty() ? "" : key + "/";
    List<FileStatus> entries = new ArrayList<>();
    String token = null;
    do {
      Listing listing = list(prefix, "/", token, 1000);
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
      FileStatus status = getFileStatus(qualified);
      if (!status.isDirectory()) {
        throw new FileAlreadyExistsException("a file is at " + qualified);
      }
      return true;
    } catch (FileNotFoundException missing) {
      String key = keyOf(qualified);
      Response put = send("PUT", "/" + bucket + "/" + key + "/", new TreeMap<>(), new byte[0]);
      if (put.status != 200) {
        throw put.failure("PUT " + key + "/");
      }
      return true;
    }
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
        Listing listing = list(key.isEmpty() ? "" : key + "/", null, token, 1000);
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
      Response deleted = send("DELETE", "/" + bucket + "/" + gone, new TreeMap<>(), null);
      if (deleted.status != 204 && deleted.status != 200) {
        throw deleted.failure("DELETE " + gone);
      }
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

  // --- S3 requests ------------------------------------------------------------------------------

  private FileStatus directory(Path path) {
    return new FileStatus(0, true, 1, 0, 0, path);
  }

  private Path child(String key) {
    return new Path(uri.toString() + "/" + key);
  }

  private static String keyOf(Path qualified) {
    return qualified.toUri().getPath().replaceAll("^/+", "").replaceAll("/+$", "");
  }

  private static final class Listing {
    final Map<String, Long> keys = new TreeMap<>();
    final List<String> prefixes = new ArrayList<>();
    String nextToken;
  }

  private Listing list(String prefix, String delimiter, String token, int maxKeys) throws IOException {
    TreeMap<String, String> query = new TreeMap<>();
    query.put("list-type", "2");
    query.put("prefix", prefix);
    query.put("max-keys", Integer.toString(maxKeys));
    if (delimiter != null) {
      query.put("delimiter", delimiter);
    }
    if (token != null) {
      query.put("continuation-token", token);
    }
    Response response = send("GET", "/" + bucket, query, null);
    if (response.status != 200) {
      throw response.failure("ListObjectsV2 " + prefix);
    }
    Listing listing = new Listing();
    try {
      DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
      factory.setNamespaceAware(false);
      Document document = factory.newDocumentBuilder().parse(new java.io.ByteArrayInputStream(response.body));
      NodeList contents = document.getElementsByTagName("Contents");
      for (int i = 0; i < contents.getLength(); i++) {
        Element item = (Element) contents.item(i);
        listing.keys.put(text(item, "Key"), Long.parseLong(text(item, "Size")));
      }
      NodeList prefixes = document.getElementsByTagName("CommonPrefixes");
      for (int i = 0; i < prefixes.getLength(); i++) {
        listing.prefixes.add(text((Element) prefixes.item(i), "Prefix"));
      }
      if ("true".equals(text(document.getDocumentElement(), "IsTruncated"))) {
        listing.nextToken = text(document.getDocumentElement(), "NextContinuationToken");
      }
    } catch (IOException e) {
      throw e;
    } catch (Exception e) {
      throw new IOException("unreadable ListObjectsV2 answer: " + e, e);
    }
    return listing;
  }

  private static String text(Element parent, String tag) {
    NodeList found = parent.getElementsByTagName(tag);
    return found.getLength() == 0 ? null : found.item(0).getTextContent();
  }

  private static final class Response {
    final int status;
    final Map<String, List<String>> headers;
    final byte[] body;

    Response(int status, Map<String, List<String>> headers, byte[] body) {
      this.status = status;
      this.headers = headers;
      this.body = body;
    }

    String header(String name, String fallback) {
      for (Map.Entry<String, List<String>> entry : headers.entrySet()) {
        if (entry.getKey() != null && entry.getKey().equalsIgnoreCase(name) && !entry.getValue().isEmpty()) {
          return entry.getValue().get(0);
        }
      }
      return fallback;
    }

    IOException failure(String what) {
      return new IOException(what + ": HTTP " + status + " " + new String(body, StandardCharsets.UTF_8));
    }
  }

  private Response send(String method, String path, TreeMap<String, String> query, byte[] body)
      throws IOException {
    StringBuilder canonicalQuery = new StringBuilder();
    for (Map.Entry<String, String> entry : query.entrySet()) {
      if (canonicalQuery.length() > 0) {
        canonicalQuery.append('&');
      }
      canonicalQuery.append(encode(entry.getKey(), true)).append('=').append(encode(entry.getValue(), true));
    }
    String canonicalPath = encode(path, false);
    URL url = new URL(endpoint + canonicalPath + (canonicalQuery.length() > 0 ? "?" + canonicalQuery : ""));
    HttpURLConnection connection = (HttpURLConnection) url.openConnection(java.net.Proxy.NO_PROXY);
    connection.setConnectTimeout(TIMEOUT_MS);
    connection.setReadTimeout(TIMEOUT_MS);
    connection.setRequestMethod(method);
    sign(connection, method, url, canonicalPath, canonicalQuery.toString());
    if (body != null) {
      connection.setDoOutput(true);
      connection.setFixedLengthStreamingMode(body.length);
      try (OutputStream out = connection.getOutputStream()) {
        out.write(body);
      }
    }
    int status = connection.getResponseCode();
    byte[] answer = new byte[0];
    InputStream stream = status >= 400 ? connection.getErrorStream() : connection.getInputStream();
    if (stream != null && !"HEAD".equals(method)) {
      try (InputStream in = stream) {
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        in.transferTo(buffer);
        answer = buffer.toByteArray();
      }
    } else if (stream != null) {
      stream.close();
    }
    return new Response(status, connection.getHeaderFields(), answer);
  }

  /** AWS Signature Version 4 for S3, payload unsigned. */
  private void sign(HttpURLConnection connection, String method, URL url, String canonicalPath,
      String canonicalQuery) throws IOException {
    String amzDate = ZonedDateTime.now(ZoneOffset.UTC).format(AMZ_DATE);
    String date = amzDate.substring(0, 8);
    String host = url.getPort() == -1 ? url.getHost() : url.getHost() + ":" + url.getPort();
    String payload = "UNSIGNED-PAYLOAD";
    connection.setRequestProperty("x-amz-date", amzDate);
    connection.setRequestProperty("x-amz-content-sha256", payload);
    if (accessKey.isEmpty()) {
      return; // anonymous, as S3A with no credentials configured for a public bucket
    }
    String signedHeaders = "host;x-amz-content-sha256;x-amz-date";
    String canonicalRequest = method + "\n" + canonicalPath + "\n" + canonicalQuery + "\n"
        + "host:" + host + "\n" + "x-amz-content-sha256:" + payload + "\n" + "x-amz-date:" + amzDate + "\n\n"
        + signedHeaders + "\n" + payload;
    String scope = date + "/" + region + "/s3/aws4_request";
    String toSign = "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex(sha256(canonicalRequest));
    byte[] key = hmac(("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8), date);
    key = hmac(key, region);
    key = hmac(key, "s3");
    key = hmac(key, "aws4_request");
    String signature = hex(hmac(key, toSign));
    connection.setRequestProperty("Authorization", "AWS4-HMAC-SHA256 Credential=" + accessKey + "/" + scope
        + ", SignedHeaders=" + signedHeaders + ", Signature=" + signature);
  }

  private static String encode(String value, boolean encodeSlash) {
    StringBuilder out = new StringBuilder();
    for (byte b : value.getBytes(StandardCharsets.UTF_8)) {
      char c = (char) (b & 0xff);
      if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
          || c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && !encodeSlash)) {
        out.append(c);
      } else {
        out.append(String.format("%%%02X", b & 0xff));
      }
    }
    return out.toString();
  }

  private static byte[] sha256(String text) throws IOException {
    try {
      return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    } catch (Exception e) {
      throw new IOException(e);
    }
  }

  private static byte[] hmac(byte[] key, String text) throws IOException {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(text.getBytes(StandardCharsets.UTF_8));
    } catch (Exception e) {
      throw new IOException(e);
    }
  }

  private static String hex(byte[] bytes) {
    StringBuilder out = new StringBuilder();
    for (byte b : bytes) {
      out.append(String.format("%02x", b & 0xff));
    }
    return out.toString();
  }
}
