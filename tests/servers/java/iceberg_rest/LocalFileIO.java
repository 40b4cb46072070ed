/*
 * Table-metadata FileIO for the Iceberg REST test server (see IcebergRestServer.java).
 */
package org.apache.iceberg.rest;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import lancesync.testing.LoopbackS3Client;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.inmemory.InMemoryFileIO;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * FileIO for table metadata: local files for file: URIs and absolute paths (no Hadoop needed);
 * s3:// and s3a:// objects on the S3 store the server was given (as iceberg-aws's S3FileIO
 * writes them, which needs the AWS SDK this machine cannot download), else in memory; memory
 * for any other scheme (gs://, ...), so tables may point anywhere.
 */
public final class LocalFileIO implements FileIO {
  private final InMemoryFileIO elsewhere = new InMemoryFileIO();
  private final LoopbackS3Client s3;

  public LocalFileIO() {
    this(null);
  }

  /** `s3`: where s3:// and s3a:// metadata files go (null: memory). */
  public LocalFileIO(LoopbackS3Client s3) {
    this.s3 = s3;
  }

  @Override
  public InputFile newInputFile(String location) {
    if (isS3(location)) {
      return new S3File(s3, location);
    }
    return isLocal(location) ? new LocalFile(location) : elsewhere.newInputFile(location);
  }

  @Override
  public OutputFile newOutputFile(String location) {
    if (isS3(location)) {
      return new S3File(s3, location);
    }
    return isLocal(location) ? new LocalFile(location) : elsewhere.newOutputFile(location);
  }

  @Override
  public void deleteFile(String location) {
    if (isS3(location)) {
      S3File file = new S3File(s3, location);
      try {
        s3.delete(file.bucket, file.key);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return;
    }
    if (!isLocal(location)) {
      elsewhere.deleteFile(location);
      return;
    }
    try {
      Files.deleteIfExists(LocalFile.pathOf(location));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static boolean isLocal(String location) {
    return location.startsWith("file:") || location.startsWith("/");
  }

  private boolean isS3(String location) {
    return s3 != null && (location.startsWith("s3://") || location.startsWith("s3a://"));
  }

  /** An object of the S3 store: read whole, written whole when the stream closes. */
  private static final class S3File implements InputFile, OutputFile {
    private final LoopbackS3Client s3;
    private final String location;
    final String bucket;
    final String key;

    S3File(LoopbackS3Client s3, String location) {
      this.s3 = s3;
      this.location = location;
      String rest = location.substring(location.indexOf("://") + 3);
      int slash = rest.indexOf('/');
      if (slash <= 0) {
        throw new IllegalArgumentException("not an object location: " + location);
      }
      this.bucket = rest.substring(0, slash);
      this.key = rest.substring(slash + 1).replaceAll("/+", "/");
    }

    @Override
    public long getLength() {
      try {
        Long length = s3.head(bucket, key);
        if (length == null) {
          throw new NotFoundException("File does not exist: %s", location);
        }
        return length;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public SeekableInputStream newStream() {
      try {
        byte[] bytes = s3.get(bucket, key);
        if (bytes == null) {
          throw new NotFoundException("File does not exist: %s", location);
        }
        return new BytesInputStream(bytes);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public String location() {
      return location;
    }

    @Override
    public boolean exists() {
      try {
        return s3.head(bucket, key) != null;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public PositionOutputStream create() {
      if (exists()) {
        throw new AlreadyExistsException("File already exists: %s", location);
      }
      return createOrOverwrite();
    }

    @Override
    public PositionOutputStream createOrOverwrite() {
      return new PositionOutputStream() {
        private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        private boolean closed;

        @Override
        public long getPos() {
          return buffer.size();
        }

        @Override
        public void write(int b) {
          buffer.write(b);
        }

        @Override
        public void write(byte[] bytes, int offset, int length) {
          buffer.write(bytes, offset, length);
        }

        @Override
        public void close() throws IOException {
          if (!closed) {
            closed = true;
            s3.put(bucket, key, buffer.toByteArray());
          }
        }
      };
    }

    @Override
    public InputFile toInputFile() {
      return this;
    }
  }

  private static final class BytesInputStream extends SeekableInputStream {
    private final byte[] bytes;
    private int position;

    BytesInputStream(byte[] bytes) {
      this.bytes = bytes;
    }

    @Override
    public long getPos() {
      return position;
    }

    @Override
    public void seek(long newPosition) {
      position = (int) Math.min(newPosition, bytes.length);
    }

    @Override
    public int read() {
      return position < bytes.length ? bytes[position++] & 0xff : -1;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) {
      if (position >= bytes.length) {
        return -1;
      }
      int count = Math.min(length, bytes.length - position);
      System.arraycopy(bytes, position, buffer, offset, count);
      position += count;
      return count;
    }
  }

  private static final class LocalFile implements InputFile, OutputFile {
    private final String location;
    private final Path path;

    LocalFile(String location) {
      this.location = location;
      this.path = pathOf(location);
    }

    /** file:/x, file:///x and /x are all the local path /x. */
    static Path pathOf(String location) {
      String path = location.startsWith("file:") ? location.substring("file:".length()) : location;
      return Path.of(path.replaceFirst("^/+", "/"));
    }

    @Override
    public long getLength() {
      try {
        return Files.size(path);
      } catch (NoSuchFileException e) {
        throw new NotFoundException(e, "File does not exist: %s", location);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public SeekableInputStream newStream() {
      try {
        return new LocalInputStream(FileChannel.open(path, StandardOpenOption.READ));
      } catch (NoSuchFileException e) {
        throw new NotFoundException(e, "File does not exist: %s", location);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public String location() {
      return location;
    }

    @Override
    public boolean exists() {
      return Files.exists(path);
    }

    @Override
    public PositionOutputStream create() {
      return open(StandardOpenOption.CREATE_NEW);
    }

    @Override
    public PositionOutputStream createOrOverwrite() {
      return open(StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING);
    }

    private PositionOutputStream open(StandardOpenOption... modes) {
      try {
        Files.createDirectories(path.getParent());
        return new LocalOutputStream(Files.newOutputStream(path, modes));
      } catch (FileAlreadyExistsException e) {
        throw new AlreadyExistsException(e, "File already exists: %s", location);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public InputFile toInputFile() {
      return this;
    }
  }

  private static final class LocalInputStream extends SeekableInputStream {
    private final FileChannel channel;

    LocalInputStream(FileChannel channel) {
      this.channel = channel;
    }

    @Override
    public long getPos() throws IOException {
      return channel.position();
    }

    @Override
    public void seek(long position) throws IOException {
      channel.position(position);
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) == -1 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
      return channel.read(ByteBuffer.wrap(buffer, offset, length));
    }

    @Override
    public void close() throws IOException {
      channel.close();
    }
  }

  private static final class LocalOutputStream extends PositionOutputStream {
    private final OutputStream out;
    private long position;

    LocalOutputStream(OutputStream out) {
      this.out = out;
    }

    @Override
    public long getPos() {
      return position;
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
      position++;
    }

    @Override
    public void write(byte[] buffer, int offset, int length) throws IOException {
      out.write(buffer, offset, length);
      position += length;
    }

    @Override
    public void flush() throws IOException {
      out.flush();
    }

    @Override
    public void close() throws IOException {
      out.close();
    }
  }
}
