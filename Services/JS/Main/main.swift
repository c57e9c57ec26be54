import Foundation
import SofaJS

exit(QueryServer.main())
