from tests.servers.unity_server.server import main

main()
