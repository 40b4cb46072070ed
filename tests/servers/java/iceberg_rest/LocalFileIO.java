/*
 * Table-metadata FileIO for the Iceberg REST test server (see IcebergRestServer.java).
 */
package org.apache.iceberg.rest;

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
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.inmemory.InMemoryFileIO;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * FileIO for table metadata: local files for file: URIs and absolute paths (no Hadoop needed),
 * memory for any other scheme (s3://, gs://, ...), so tables may point anywhere.
 */
public final class LocalFileIO implements FileIO {
  private final InMemoryFileIO elsewhere = new InMemoryFileIO();

  @Override
  public InputFile newInputFile(String location) {
    return isLocal(location) ? new LocalFile(location) : elsewhere.newInputFile(location);
  }

  @Override
  public OutputFile newOutputFile(String location) {
    return isLocal(location) ? new LocalFile(location) : elsewhere.newOutputFile(location);
  }

  @Override
  public void deleteFile(String location) {
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
