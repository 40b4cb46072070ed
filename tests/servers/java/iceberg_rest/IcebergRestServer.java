/*
 * Test-only Iceberg REST catalog for lance-sync's test suite.
 *
 * The catalog semantics are upstream Iceberg's: every REST operation is answered by
 * org.apache.iceberg.rest.CatalogHandlers (the code behind upstream's RESTCatalogAdapter) on top
 * of a JdbcCatalog (SQLite) or an InMemoryCatalog, requests and responses go through Iceberg's own
 * RESTObjectMapper, and errors are Iceberg ErrorResponse JSON. This class only adds what the
 * servlet container adds upstream: HTTP on 127.0.0.1 (the JDK's HttpServer), route lookup,
 * optional bearer-token auth, and a request counter for tests at /__test/requests.
 *
 * It is in package org.apache.iceberg.rest because RESTObjectMapper is package-private there,
 * as upstream's RESTCatalogServlet is.
 *
 * Options (all --name=value): port, warehouse-dir, catalog (jdbc|memory), jdbc-uri, warehouse,
 * prefix, announce-prefix (true|false), token, credential (client_id:client_secret), threads,
 * exit-on-stdin-eof (true|false), s3-endpoint, s3-region, s3-access-key, s3-secret-key (the
 * JdbcCatalog's s3:// metadata files go to that store, see LocalFileIO).
 */
package org.apache.iceberg.rest;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.BadRequestException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NamespaceNotEmptyException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.exceptions.ServiceUnavailableException;
import org.apache.iceberg.exceptions.UnprocessableEntityException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.inmemory.InMemoryCatalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import lancesync.testing.LoopbackS3Client;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.requests.RenameTableRequest;
import org.apache.iceberg.rest.requests.ReportMetricsRequest;
import org.apache.iceberg.rest.requests.UpdateNamespacePropertiesRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.ErrorResponseParser;
import org.apache.iceberg.rest.responses.OAuthTokenResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonProcessingException;

public final class IcebergRestServer {
  private static final String TEST_PATH = "/__test/requests";
  private static final String TOKENS_PATH = "/v1/oauth/tokens";

  /** Exception class -> HTTP status, checked in order with instanceof (subclasses map too). */
  private static final Map<Class<? extends Exception>, Integer> STATUS_BY_EXCEPTION =
      statusByException();

  private final Catalog catalog;
  private final SupportsNamespaces namespaces;
  private final Options options;
  private final List<Route> routes = new ArrayList<>();
  private final Set<String> validTokens = ConcurrentHashMap.newKeySet();
  private final AtomicLong requestsServed = new AtomicLong();
  private final Map<String, AtomicLong> requestsByRoute = new ConcurrentHashMap<>();

  private IcebergRestServer(Catalog catalog, Options options) {
    this.catalog = catalog;
    this.namespaces = (SupportsNamespaces) catalog;
    this.options = options;
    if (options.token != null) {
      validTokens.add(options.token);
    }
    addRoutes();
  }

  public static void main(String[] args) throws IOException {
    Options options = Options.parse(args);
    Catalog catalog = openCatalog(options);
    IcebergRestServer server = new IcebergRestServer(catalog, options);
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", options.port), 128);
    http.createContext("/", server::serve);
    http.setExecutor(Executors.newFixedThreadPool(options.threads));
    http.start();
    System.out.printf(
        "iceberg-rest: listening on 127.0.0.1:%d, catalog=%s, prefix=%s, auth=%s%n",
        options.port, catalog.getClass().getSimpleName(), options.prefix, options.authRequired());
    if (options.exitOnStdinEof) {
      exitWhenStdinCloses();
    }
  }

  // ---------------------------------------------------------------- catalog

  private static Catalog openCatalog(Options options) {
    Map<String, String> properties = new HashMap<>();
    properties.put("warehouse", options.warehouseDir);
    if ("memory".equals(options.catalog)) {
      InMemoryCatalog memory = new InMemoryCatalog();
      memory.initialize(options.warehouse, properties);
      return memory;
    }
    properties.put("uri", options.jdbcUri);
    properties.put("jdbc.schema-version", "V1");
    properties.put("clients", "4");
    // SQLite pragmas (passed to the driver): concurrent readers, waits instead of SQLITE_BUSY,
    // and no fsync (test data only).
    properties.put("jdbc.journal_mode", "WAL");
    properties.put("jdbc.busy_timeout", "30000");
    properties.put("jdbc.synchronous", "OFF");
    LoopbackS3Client s3 = options.s3Endpoint == null ? null
        : new LoopbackS3Client(options.s3Endpoint, options.s3Region, options.s3AccessKey, options.s3SecretKey);
    JdbcCatalog jdbc = new JdbcCatalog(props -> new LocalFileIO(s3), null, true);
    jdbc.initialize(options.warehouse, properties);
    return jdbc;
  }

  // ---------------------------------------------------------------- routes

  /** One REST operation: method + path template (upstream ResourcePaths) -> handler. */
  private record Route(
      String method, String template, List<String> parts, Class<?> bodyClass, Handler handler) {

    /** Path variables of a matching request path, or null when it does not match. */
    Map<String, String> match(String requestMethod, List<String> requestParts) {
      if (!method.equals(requestMethod) || parts.size() != requestParts.size()) {
        return null;
      }
      Map<String, String> vars = new HashMap<>();
      for (int i = 0; i < parts.size(); i++) {
        String part = parts.get(i);
        if (part.startsWith("{") && part.endsWith("}")) {
          vars.put(part.substring(1, part.length() - 1), requestParts.get(i));
        } else if (!part.equals(requestParts.get(i))) {
          return null;
        }
      }
      return vars;
    }

    String name() {
      return method + " " + template;
    }
  }

  @FunctionalInterface
  private interface Handler {
    /** Returns the response object (serialized as JSON), or null for 204 No Content. */
    Object handle(Map<String, String> vars, Object body);
  }

  private void addRoutes() {
    route("GET", "/v1/config", null, (vars, body) -> config(vars));
    route("POST", TOKENS_PATH, String.class, (vars, body) -> issueToken((String) body));

    route("GET", ResourcePaths.V1_NAMESPACES, null, (vars, body) -> listNamespaces(vars));
    route("POST", ResourcePaths.V1_NAMESPACES, CreateNamespaceRequest.class,
        (vars, body) -> CatalogHandlers.createNamespace(namespaces, (CreateNamespaceRequest) body));
    route("HEAD", ResourcePaths.V1_NAMESPACE, null, (vars, body) -> {
      CatalogHandlers.namespaceExists(namespaces, namespace(vars));
      return null;
    });
    route("GET", ResourcePaths.V1_NAMESPACE, null,
        (vars, body) -> CatalogHandlers.loadNamespace(namespaces, namespace(vars)));
    route("DELETE", ResourcePaths.V1_NAMESPACE, null, (vars, body) -> {
      CatalogHandlers.dropNamespace(namespaces, namespace(vars));
      return null;
    });
    route("POST", ResourcePaths.V1_NAMESPACE_PROPERTIES, UpdateNamespacePropertiesRequest.class,
        (vars, body) -> CatalogHandlers.updateNamespaceProperties(
            namespaces, namespace(vars), (UpdateNamespacePropertiesRequest) body));

    route("GET", ResourcePaths.V1_TABLES, null, (vars, body) -> listTables(vars));
    route("POST", ResourcePaths.V1_TABLES, CreateTableRequest.class,
        (vars, body) -> createTable(namespace(vars), (CreateTableRequest) body));
    route("HEAD", ResourcePaths.V1_TABLE, null, (vars, body) -> {
      CatalogHandlers.tableExists(catalog, table(vars));
      return null;
    });
    route("GET", ResourcePaths.V1_TABLE, null,
        (vars, body) -> CatalogHandlers.loadTable(catalog, table(vars)));
    route("POST", ResourcePaths.V1_TABLE, UpdateTableRequest.class,
        (vars, body) -> CatalogHandlers.updateTable(catalog, table(vars), (UpdateTableRequest) body));
    route("DELETE", ResourcePaths.V1_TABLE, null, (vars, body) -> dropTable(vars));
    route("POST", ResourcePaths.V1_TABLE_REGISTER, RegisterTableRequest.class,
        (vars, body) -> CatalogHandlers.registerTable(
            catalog, namespace(vars), (RegisterTableRequest) body));
    route("POST", ResourcePaths.V1_TABLE_RENAME, RenameTableRequest.class, (vars, body) -> {
      CatalogHandlers.renameTable(catalog, (RenameTableRequest) body);
      return null;
    });
    route("POST", ResourcePaths.V1_TABLE_METRICS, ReportMetricsRequest.class, (vars, body) -> null);
  }

  private void route(String method, String template, Class<?> bodyClass, Handler handler) {
    String path = withPrefix(template).substring(1);
    routes.add(new Route(method, template, List.of(path.split("/", -1)), bodyClass, handler));
  }

  /** The template with {prefix} replaced by the configured prefix, or dropped without one. */
  private String withPrefix(String template) {
    return options.prefix == null
        ? template.replace("/{prefix}", "")
        : template.replace("{prefix}", options.prefix);
  }

  // ---------------------------------------------------------------- handlers

  /**
   * The ConfigResponse JSON. Built by hand: upstream's Endpoint class needs the shaded httpcore5
   * classes, which the runtime jar we use does not ship; "METHOD path" is Endpoint's own format.
   */
  private Map<String, Object> config(Map<String, String> vars) {
    String warehouse = vars.get("warehouse");
    if (warehouse != null && !warehouse.equals(options.warehouse)) {
      throw new NotFoundException("Unknown warehouse: %s", warehouse);
    }
    Map<String, String> defaults = new TreeMap<>();
    if (options.prefix != null && options.announcePrefix) {
      defaults.put("prefix", options.prefix);
    }
    List<String> endpoints = new ArrayList<>();
    for (Route route : routes) {
      if (route.template.contains("{prefix}")) {
        endpoints.add(route.name());
      }
    }
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("defaults", defaults);
    config.put("overrides", Map.of());
    config.put("endpoints", endpoints);
    return config;
  }

  private Object listNamespaces(Map<String, String> vars) {
    // The spec's `parent`: the levels joined by 0x1F, then query-encoded once (as Iceberg 1.10's
    // own client sends it); levels are not percent-encoded a second time.
    String parent = vars.get("parent");
    Namespace namespace = parent == null || parent.isEmpty()
        ? Namespace.empty()
        : Namespace.of(RESTUtil.NAMESPACE_SPLITTER.splitToStream(parent).toArray(String[]::new));
    String pageSize = vars.get("pageSize");
    return pageSize == null
        ? CatalogHandlers.listNamespaces(namespaces, namespace)
        : CatalogHandlers.listNamespaces(namespaces, namespace, vars.get("pageToken"), pageSize);
  }

  private Object listTables(Map<String, String> vars) {
    String pageSize = vars.get("pageSize");
    return pageSize == null
        ? CatalogHandlers.listTables(catalog, namespace(vars))
        : CatalogHandlers.listTables(catalog, namespace(vars), vars.get("pageToken"), pageSize);
  }

  private Object createTable(Namespace namespace, CreateTableRequest request) {
    request.validate();
    return request.stageCreate()
        ? CatalogHandlers.stageTableCreate(catalog, namespace, request)
        : CatalogHandlers.createTable(catalog, namespace, request);
  }

  private Object dropTable(Map<String, String> vars) {
    if (Boolean.parseBoolean(vars.get("purgeRequested"))) {
      CatalogHandlers.purgeTable(catalog, table(vars));
    } else {
      CatalogHandlers.dropTable(catalog, table(vars));
    }
    return null;
  }

  /** OAuth2 client-credentials grant; any client when auth is off, else the configured one. */
  private Object issueToken(String form) {
    Map<String, String> request = RESTUtil.decodeFormData(form);
    String grantType = request.get("grant_type");
    if (!"client_credentials".equals(grantType)) {
      throw new OAuthError(400, "unsupported_grant_type", "Unsupported grant_type: " + grantType);
    }
    String presented = request.get("client_id") + ":" + request.get("client_secret");
    if (options.credential != null && !options.credential.equals(presented)) {
      throw new OAuthError(401, "invalid_client", "Unknown client or wrong secret");
    }
    String token = "token-" + UUID.randomUUID();
    validTokens.add(token);
    return OAuthTokenResponse.builder()
        .withToken(token)
        .withTokenType("bearer")
        .withIssuedTokenType("urn:ietf:params:oauth:token-type:access_token")
        .setExpirationInSeconds(3600)
        .build();
  }

  private static Namespace namespace(Map<String, String> vars) {
    return RESTUtil.decodeNamespace(vars.get("namespace"));
  }

  private static TableIdentifier table(Map<String, String> vars) {
    return TableIdentifier.of(namespace(vars), RESTUtil.decodeString(vars.get("table")));
  }

  // ---------------------------------------------------------------- HTTP

  private void serve(HttpExchange exchange) throws IOException {
    try (exchange) {
      String method = exchange.getRequestMethod();
      String rawPath = exchange.getRequestURI().getRawPath();
      if (rawPath.equals(TEST_PATH)) {
        serveCounter(exchange, method);
        return;
      }
      int status = respond(exchange, method, rawPath);
      System.out.printf("%s %s %d%n", method, rawPath, status);
    } catch (RuntimeException | IOException e) {
      e.printStackTrace(System.out);
      throw e;
    }
  }

  /** Answers one API request; returns the HTTP status sent. */
  private int respond(HttpExchange exchange, String method, String rawPath) throws IOException {
    List<String> parts = List.of(rawPath.substring(1).split("/", -1));
    for (Route route : routes) {
      Map<String, String> vars = route.match(method, parts);
      if (vars != null) {
        count(route.name());
        return respond(exchange, route, vars);
      }
    }
    count("unrouted");
    return sendError(exchange, new BadRequestException("No route for request: %s %s", method, rawPath));
  }

  private int respond(HttpExchange exchange, Route route, Map<String, String> pathVars)
      throws IOException {
    boolean isTokenRoute = route.template.equals(TOKENS_PATH);
    if (!isTokenRoute && !authorized(exchange)) {
      exchange.getResponseHeaders().add("WWW-Authenticate", "Bearer");
      return sendError(exchange, new NotAuthorizedException("Missing or invalid bearer token"));
    }
    try {
      Map<String, String> vars = queryParameters(exchange.getRequestURI().getRawQuery());
      vars.putAll(pathVars);
      Object body = readBody(exchange, route.bodyClass);
      Object response = route.handler.handle(vars, body);
      return response == null ? sendEmpty(exchange) : sendJson(exchange, 200, response);
    } catch (OAuthError e) {
      return sendJson(exchange, e.status, Map.of("error", e.error, "error_description", e.getMessage()));
    } catch (RuntimeException | LinkageError e) {
      return sendError(exchange, e);
    }
  }

  private boolean authorized(HttpExchange exchange) {
    if (!options.authRequired()) {
      return true;
    }
    String header = exchange.getRequestHeaders().getFirst("Authorization");
    return header != null
        && header.regionMatches(true, 0, "Bearer ", 0, 7)
        && validTokens.contains(header.substring(7).trim());
  }

  private static Object readBody(HttpExchange exchange, Class<?> bodyClass) throws IOException {
    if (bodyClass == null) {
      return null;
    }
    byte[] bytes = readAll(exchange.getRequestBody());
    if (bodyClass == String.class) {
      return new String(bytes, StandardCharsets.UTF_8);
    }
    if (bytes.length == 0) {
      throw new BadRequestException("Missing request body");
    }
    try {
      return RESTObjectMapper.mapper().readValue(bytes, bodyClass);
    } catch (JsonProcessingException e) {
      throw new BadRequestException(e, "Invalid JSON body: %s", e.getOriginalMessage());
    }
  }

  /** Decoded query parameters (path variables stay encoded: RESTUtil decodes them). */
  private static Map<String, String> queryParameters(String rawQuery) {
    Map<String, String> params = new HashMap<>();
    if (rawQuery == null || rawQuery.isEmpty()) {
      return params;
    }
    for (String pair : rawQuery.split("&")) {
      int equals = pair.indexOf('=');
      if (equals > 0) {
        params.put(
            RESTUtil.decodeString(pair.substring(0, equals)),
            RESTUtil.decodeString(pair.substring(equals + 1)));
      } else if (!pair.isEmpty()) {
        params.put(RESTUtil.decodeString(pair), "");
      }
    }
    return params;
  }

  private static int sendError(HttpExchange exchange, Throwable error) throws IOException {
    int status = statusOf(error);
    ErrorResponse.Builder response = ErrorResponse.builder()
        .responseCode(status)
        .withType(error.getClass().getSimpleName())
        .withMessage(error.getMessage());
    if (status >= 500) {
      response.withStackTrace(error);
      System.out.println(stackTrace(error));
    }
    byte[] json = ErrorResponseParser.toJson(response.build()).getBytes(StandardCharsets.UTF_8);
    return send(exchange, status, json);
  }

  private static int sendJson(HttpExchange exchange, int status, Object response)
      throws IOException {
    return send(exchange, status, RESTObjectMapper.mapper().writeValueAsBytes(response));
  }

  private static int sendEmpty(HttpExchange exchange) throws IOException {
    exchange.sendResponseHeaders(204, -1);
    return 204;
  }

  private static int send(HttpExchange exchange, int status, byte[] body) throws IOException {
    if (exchange.getRequestMethod().equals("HEAD")) {
      exchange.sendResponseHeaders(status, -1);
      return status;
    }
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    exchange.sendResponseHeaders(status, body.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(body);
    }
    return status;
  }

  // ---------------------------------------------------------------- test-only counter

  private void count(String routeName) {
    requestsServed.incrementAndGet();
    requestsByRoute.computeIfAbsent(routeName, name -> new AtomicLong()).incrementAndGet();
  }

  /** GET: {"total": n, "by_route": {...}}; DELETE: reset. Never counted itself. */
  private void serveCounter(HttpExchange exchange, String method) throws IOException {
    if (method.equals("DELETE")) {
      requestsServed.set(0);
      requestsByRoute.clear();
      sendEmpty(exchange);
      return;
    }
    Map<String, Long> byRoute = new TreeMap<>();
    requestsByRoute.forEach((name, count) -> byRoute.put(name, count.get()));
    Map<String, Object> counts = new LinkedHashMap<>();
    counts.put("total", requestsServed.get());
    counts.put("by_route", byRoute);
    sendJson(exchange, 200, counts);
  }

  // ---------------------------------------------------------------- helpers

  private static Map<Class<? extends Exception>, Integer> statusByException() {
    Map<Class<? extends Exception>, Integer> codes = new LinkedHashMap<>();
    codes.put(NotAuthorizedException.class, 401);
    codes.put(ForbiddenException.class, 403);
    codes.put(NoSuchNamespaceException.class, 404);
    codes.put(NoSuchTableException.class, 404);
    codes.put(NotFoundException.class, 404);
    codes.put(AlreadyExistsException.class, 409);
    codes.put(NamespaceNotEmptyException.class, 409);
    codes.put(CommitFailedException.class, 409);
    codes.put(UnprocessableEntityException.class, 422);
    codes.put(CommitStateUnknownException.class, 500);
    codes.put(ServiceUnavailableException.class, 503);
    codes.put(UnsupportedOperationException.class, 406);
    codes.put(BadRequestException.class, 400);
    codes.put(ValidationException.class, 400);
    codes.put(IllegalArgumentException.class, 400);
    return codes;
  }

  private static int statusOf(Throwable error) {
    for (Map.Entry<Class<? extends Exception>, Integer> entry : STATUS_BY_EXCEPTION.entrySet()) {
      if (entry.getKey().isInstance(error)) {
        return entry.getValue();
      }
    }
    return 500;
  }

  private static String stackTrace(Throwable error) {
    StringWriter text = new StringWriter();
    error.printStackTrace(new PrintWriter(text));
    return text.toString();
  }

  private static byte[] readAll(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    in.transferTo(out);
    return out.toByteArray();
  }

  /** Lets the test suite's death end this server: it holds our stdin open while it runs. */
  private static void exitWhenStdinCloses() {
    Thread watcher = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // ignore input; only end-of-file matters
        }
      } catch (IOException ignored) {
        // treat a broken stdin like end-of-file
      }
      System.out.println("iceberg-rest: stdin closed, exiting");
      System.exit(0);
    }, "stdin-watcher");
    watcher.setDaemon(true);
    watcher.start();
  }

  /** An OAuth2 token-endpoint error (RFC 6749 5.2), answered as {"error", "error_description"}. */
  private static final class OAuthError extends RuntimeException {
    private final int status;
    private final String error;

    OAuthError(int status, String error, String description) {
      super(description);
      this.status = status;
      this.error = error;
    }
  }

  // ---------------------------------------------------------------- options

  private static final class Options {
    int port;
    String warehouseDir;
    String catalog = "memory";
    String jdbcUri;
    String warehouse = "warehouse";
    String prefix;
    boolean announcePrefix = true;
    String token;
    String credential;
    int threads = 16;
    boolean exitOnStdinEof;
    String s3Endpoint;
    String s3Region = "us-east-1";
    String s3AccessKey;
    String s3SecretKey;

    boolean authRequired() {
      return token != null || credential != null;
    }

    static Options parse(String[] args) {
      Map<String, String> values = new HashMap<>();
      for (String arg : args) {
        int equals = arg.indexOf('=');
        if (!arg.startsWith("--") || equals < 0) {
          throw new IllegalArgumentException("Expected --name=value, got: " + arg);
        }
        values.put(arg.substring(2, equals), arg.substring(equals + 1));
      }
      Options options = new Options();
      options.port = Integer.parseInt(required(values, "port"));
      options.warehouseDir = required(values, "warehouse-dir");
      options.catalog = values.getOrDefault("catalog", options.catalog);
      options.jdbcUri = values.get("jdbc-uri");
      options.warehouse = values.getOrDefault("warehouse", options.warehouse);
      options.prefix = values.get("prefix");
      options.announcePrefix = Boolean.parseBoolean(values.getOrDefault("announce-prefix", "true"));
      options.token = values.get("token");
      options.credential = values.get("credential");
      options.threads = Integer.parseInt(values.getOrDefault("threads", "16"));
      options.exitOnStdinEof = Boolean.parseBoolean(values.get("exit-on-stdin-eof"));
      options.s3Endpoint = values.get("s3-endpoint");
      options.s3Region = values.getOrDefault("s3-region", options.s3Region);
      options.s3AccessKey = values.get("s3-access-key");
      options.s3SecretKey = values.get("s3-secret-key");
      if (options.s3Endpoint != null && !"jdbc".equals(options.catalog)) {
        throw new IllegalArgumentException("--s3-endpoint needs --catalog=jdbc (InMemoryCatalog keeps metadata in memory)");
      }
      if ("jdbc".equals(options.catalog) && options.jdbcUri == null) {
        throw new IllegalArgumentException("--catalog=jdbc needs --jdbc-uri");
      }
      return options;
    }

    private static String required(Map<String, String> values, String name) {
      String value = values.get(name);
      if (value == null) {
        throw new IllegalArgumentException("Missing --" + name);
      }
      return value;
    }
  }
}
