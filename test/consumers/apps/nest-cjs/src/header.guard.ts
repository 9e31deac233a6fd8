import {
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from "@nestjs/common";

// Stands in for a real auth guard: "Authorization: User <name>" sets request.user.
@Injectable()
export class HeaderGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest();
    const name = /^User (\w+)$/.exec(request.headers.authorization ?? "")?.[1];
    if (name === undefined) throw new UnauthorizedException();
    request.user = { sub: name };
    return true;
  }
}
