from tests.servers.hive3_server.server import main

main()
