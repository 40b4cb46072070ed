/*
 * A small S3 client for the suite's Java test servers (the Hive Metastore's file system and the
 * Iceberg REST server's FileIO): path-style requests, AWS Signature V4 with an unsigned
 * payload, the JDK only. It stands in for the AWS SDK, which cannot be downloaded here (no
 * Maven) and is in none of the jars the suite has.
 */
package lancesync.testing;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.Proxy;
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
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public final class LoopbackS3Client {
  private static final DateTimeFormatter AMZ_DATE = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'");
  private static final int TIMEOUT_MS = 30_000;
  private static final String UNSIGNED = "UNSIGNED-PAYLOAD";

  private final String endpoint;
  private final String region;
  private final String accessKey;
  private final String secretKey;

  /** `accessKey` empty: anonymous requests. */
  public LoopbackS3Client(String endpoint, String region, String accessKey, String secretKey) {
    this.endpoint = endpoint.replaceAll("/+$", "");
    this.region = region;
    this.accessKey = accessKey == null ? "" : accessKey;
    this.secretKey = secretKey == null ? "" : secretKey;
  }

  /** One page of ListObjectsV2: keys with their sizes, common prefixes, the next token. */
  public static final class Listing {
    public final Map<String, Long> keys = new TreeMap<>();
    public final List<String> prefixes = new ArrayList<>();
    public String nextToken;
  }

  /** The object's length, or null when there is no such object. */
  public Long head(String bucket, String key) throws IOException {
    Response response = send("HEAD", bucket, key, new TreeMap<>(), null);
    if (response.status == 404) {
      return null;
    }
    response.check("HEAD " + key, 200);
    return Long.parseLong(response.header("Content-Length", "0"));
  }

  /** The object's bytes, or null when there is no such object. */
  public byte[] get(String bucket, String key) throws IOException {
    Response response = send("GET", bucket, key, new TreeMap<>(), null);
    if (response.status == 404) {
      return null;
    }
    response.check("GET " + key, 200);
    return response.body;
  }

  public void put(String bucket, String key, byte[] body) throws IOException {
    send("PUT", bucket, key, new TreeMap<>(), body).check("PUT " + key, 200);
  }

  public void delete(String bucket, String key) throws IOException {
    send("DELETE", bucket, key, new TreeMap<>(), null).check("DELETE " + key, 200, 204);
  }

  public Listing list(String bucket, String prefix, String delimiter, String token, int maxKeys)
      throws IOException {
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
    Response response = send("GET", bucket, null, query, null);
    response.check("ListObjectsV2 " + prefix, 200);
    Listing listing = new Listing();
    try {
      DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
      Document document = factory.newDocumentBuilder().parse(new ByteArrayInputStream(response.body));
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

    void check(String what, int... expected) throws IOException {
      for (int status : expected) {
        if (this.status == status) {
          return;
        }
      }
      throw new IOException(what + ": HTTP " + status + " " + new String(body, StandardCharsets.UTF_8));
    }
  }

  private Response send(String method, String bucket, String key, TreeMap<String, String> query, byte[] body)
      throws IOException {
    StringBuilder canonicalQuery = new StringBuilder();
    for (Map.Entry<String, String> entry : query.entrySet()) {
      if (canonicalQuery.length() > 0) {
        canonicalQuery.append('&');
      }
      canonicalQuery.append(encode(entry.getKey(), true)).append('=').append(encode(entry.getValue(), true));
    }
    String canonicalPath = encode("/" + bucket + (key == null ? "" : "/" + key), false);
    URL url = new URL(endpoint + canonicalPath + (canonicalQuery.length() > 0 ? "?" + canonicalQuery : ""));
    HttpURLConnection connection = (HttpURLConnection) url.openConnection(Proxy.NO_PROXY);
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
    if (stream != null) {
      try (InputStream in = stream) {
        if (!"HEAD".equals(method)) {
          ByteArrayOutputStream buffer = new ByteArrayOutputStream();
          in.transferTo(buffer);
          answer = buffer.toByteArray();
        }
      }
    }
    return new Response(status, connection.getHeaderFields(), answer);
  }

  /** AWS Signature Version 4 for S3, payload unsigned. */
  private void sign(HttpURLConnection connection, String method, URL url, String canonicalPath,
      String canonicalQuery) throws IOException {
    String amzDate = ZonedDateTime.now(ZoneOffset.UTC).format(AMZ_DATE);
    String date = amzDate.substring(0, 8);
    String host = url.getPort() == -1 ? url.getHost() : url.getHost() + ":" + url.getPort();
    connection.setRequestProperty("x-amz-date", amzDate);
    connection.setRequestProperty("x-amz-content-sha256", UNSIGNED);
    if (accessKey.isEmpty()) {
      return;
    }
    String signedHeaders = "host;x-amz-content-sha256;x-amz-date";
    String canonicalRequest = method + "\n" + canonicalPath + "\n" + canonicalQuery + "\n"
        + "host:" + host + "\n" + "x-amz-content-sha256:" + UNSIGNED + "\n" + "x-amz-date:" + amzDate + "\n\n"
        + signedHeaders + "\n" + UNSIGNED;
    String scope = date + "/" + region + "/s3/aws4_request";
    String toSign = "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex(sha256(canonicalRequest));
    byte[] key = hmac(("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8), date);
    key = hmac(key, region);
    key = hmac(key, "s3");
    key = hmac(key, "aws4_request");
    connection.setRequestProperty("Authorization", "AWS4-HMAC-SHA256 Credential=" + accessKey + "/" + scope
        + ", SignedHeaders=" + signedHeaders + ", Signature=" + hex(hmac(key, toSign)));
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
