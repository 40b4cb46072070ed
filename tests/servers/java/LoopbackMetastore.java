import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.hadoop.hive.metastore.txn.TxnDbUtil;
import org.apache.thrift.TException;
import org.apache.thrift.TProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TMessage;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.protocol.TProtocolDecorator;
import org.apache.thrift.server.ServerContext;
import org.apache.thrift.server.TServerEventHandler;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransport;

/**
 * Serves the stock Hive Metastore handler on 127.0.0.1 only (HiveMetaStore.main binds every
 * interface), and counts the Thrift calls it handles.
 *
 * <p>Usage: {@code LoopbackMetastore PORTS_FILE [--without-transaction-tables]}. Configuration
 * comes from hive-site.xml on the classpath. Before serving, Hive's own TxnDbUtil creates the
 * transaction tables that the lock API needs (DataNucleus' autoCreateAll makes only the
 * catalog's tables); with {@code --without-transaction-tables} it does not, so the metastore is
 * one whose schema autoCreateAll alone made, as in many quick set-ups, and every call of the
 * lock API fails. Once both sockets are bound, writes "THRIFT_PORT COUNTER_PORT" to PORTS_FILE. The
 * counter port answers GET /requests with the number of calls served and POST /requests by
 * resetting it. The process exits when its standard input reaches end of file, so it never
 * outlives the test session that started it.
 */
public final class LoopbackMetastore {
  private static final AtomicLong REQUESTS = new AtomicLong();
  private static final String WITHOUT_TXN = "--without-transaction-tables";

  public static void main(String[] args) throws Exception {
    boolean withoutTransactionTables = args.length == 2 && WITHOUT_TXN.equals(args[1]);
    if (args.length != 1 && !withoutTransactionTables) {
      throw new IllegalArgumentException("usage: LoopbackMetastore PORTS_FILE [" + WITHOUT_TXN + "]");
    }
    exitWhenStdinCloses();
    InetAddress loopback = InetAddress.getByName("127.0.0.1");

    HiveConf conf = new HiveConf();
    if (!withoutTransactionTables) {
      TxnDbUtil.prepDb(conf);
    }
    ThriftHiveMetastore.Iface handler =
        HiveMetaStore.newRetryingHMSHandler("loopback-metastore", conf, false);
    ServerSocket thriftSocket = new ServerSocket(0, 128, loopback);
    HttpServer counter = HttpServer.create(new InetSocketAddress(loopback, 0), 0);
    counter.createContext("/requests", LoopbackMetastore::answerCounter);
    counter.start();

    TThreadPoolServer server = new TThreadPoolServer(
        new TThreadPoolServer.Args(new TServerSocket(thriftSocket))
            .processor(counting(new ThriftHiveMetastore.Processor<>(handler)))
            .protocolFactory(new TBinaryProtocol.Factory())
            .minWorkerThreads(8)
            .maxWorkerThreads(512));
    server.setServerEventHandler(releaseStoreOnDisconnect(handler));

    writePorts(Paths.get(args[0]), thriftSocket.getLocalPort(), counter.getAddress().getPort());
    server.serve();
  }

  /** Counts each call once its message header has arrived (not the end of a connection). */
  private static TProcessor counting(TProcessor processor) {
    return (in, out) -> processor.process(new TProtocolDecorator(in) {
      @Override
      public TMessage readMessageBegin() throws TException {
        TMessage message = super.readMessageBegin();
        REQUESTS.incrementAndGet();
        return message;
      }
    }, out);
  }

  /** Like HiveMetaStore's own server: drop the worker thread's RawStore when a client leaves. */
  private static TServerEventHandler releaseStoreOnDisconnect(ThriftHiveMetastore.Iface handler) {
    return new TServerEventHandler() {
      @Override
      public void preServe() {}

      @Override
      public ServerContext createContext(TProtocol in, TProtocol out) {
        return null;
      }

      @Override
      public void deleteContext(ServerContext context, TProtocol in, TProtocol out) {
        try {
          handler.shutdown();
        } catch (TException e) {
          // Nothing to release.
        }
      }

      @Override
      public void processContext(ServerContext context, TTransport in, TTransport out) {}
    };
  }

  private static void answerCounter(HttpExchange exchange) throws IOException {
    long count = "POST".equals(exchange.getRequestMethod()) ? resetCount() : REQUESTS.get();
    byte[] body = Long.toString(count).getBytes(StandardCharsets.US_ASCII);
    exchange.getResponseHeaders().set("Content-Type", "text/plain");
    exchange.sendResponseHeaders(200, body.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(body);
    }
  }

  private static long resetCount() {
    REQUESTS.set(0);
    return 0;
  }

  private static void writePorts(Path portsFile, int thriftPort, int counterPort)
      throws IOException {
    Path partial = portsFile.resolveSibling(portsFile.getFileName() + ".partial");
    Files.write(partial, (thriftPort + " " + counterPort + "\n").getBytes(StandardCharsets.US_ASCII));
    Files.move(partial, portsFile, StandardCopyOption.ATOMIC_MOVE);
  }

  private static void exitWhenStdinCloses() {
    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // Input is ignored; only its end matters.
        }
      } catch (IOException e) {
        // A broken pipe means the parent is gone, too.
      }
      Runtime.getRuntime().halt(0);
    }, "stdin-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
  }
}
